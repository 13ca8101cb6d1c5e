/* webscope.bpf.c's run-queue latency hook, included at its end (it uses its globals and
 * helpers): each watched thread's wait from becoming runnable (a wake-up, or a preemption
 * that left it runnable) to running again. Not a header of its own: it has no meaning apart.
 *
 * One hook, at the switch-in, reading the scheduler's own stamp: sched_info.last_queued,
 * which the kernel sets on the run queue's clock when the task is queued (sched_info_enqueue,
 * at a wake-up or a preemption) and turns into /proc/PID/schedstat's run_delay just after this
 * tracepoint (sched_info_arrive, in prepare_task_switch). The clock it was set on is the run
 * queue's, updated by __schedule before it picked this task, and reached here through the
 * task's fair-class queue (se.cfs_rq->rq, this CPU's for the task being switched in); a task
 * of another class without one is counted untimed. Until 2026-11-30 three hooks
 * did this (sched_wakeup and sched_wakeup_new stamping the task in task-local storage,
 * sched_switch reading it): a switch-in, charged to the thread switched in, cost a storage
 * lookup there, and each wake-up a storage update in the waker. A wait that a migration
 * between run queues splits is counted from the migration (sched_info_dequeue closes the
 * first part); a pinned server has none. */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (!ntgids || !watched_tgid(next->tgid))
		return 0;
	__u64 queued = next->sched_info.last_queued;
	const struct cfs_rq *cfs = next->se.cfs_rq;
	const struct rq *rq = cfs ? cfs->rq : 0;
	__u64 now = rq ? rq->clock : 0;
	if (!queued || now < queued) {
		__sync_fetch_and_add(&runq_counters[R_MISSED], 1);
		return 0;
	}
	record(runq, now - queued);
	__sync_fetch_and_add(&runq_counters[R_WAITS], 1);
	return 0;
}
