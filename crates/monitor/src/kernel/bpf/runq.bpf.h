/* webscope.bpf.c's run-queue latency hooks, included at its end (they use its globals and
 * helpers): each watched thread's wait from a wake-up, or a preemption that left it
 * runnable, to running again. Not a header of its own: it has no meaning apart. */

/* When each watched thread became runnable (0: not waiting), kept in the task itself:
 * task-local storage is a few loads where a hash map update took the better part of a
 * microsecond here. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} woken SEC(".maps");

static __always_inline void runnable(struct task_struct *p)
{
	__u64 *since = bpf_task_storage_get(&woken, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (since)
		*since = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	if (ntgids && watched_tgid(p->tgid))
		runnable(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	if (ntgids && watched_tgid(p->tgid))
		runnable(p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (!ntgids)
		return 0;
	/* Preempted while runnable: it waits in the run queue from now. */
	if (prev_state == 0 && watched_tgid(prev->tgid))
		runnable(prev);
	if (!watched_tgid(next->tgid))
		return 0;
	__u64 *since = bpf_task_storage_get(&woken, next, 0, 0);
	if (!since || !*since) {
		__sync_fetch_and_add(&runq_counters[R_MISSED], 1);
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	record(runq, now > *since ? now - *since : 0);
	*since = 0;
	__sync_fetch_and_add(&runq_counters[R_WAITS], 1);
	return 0;
}
