//! CPU clocks of a thread and of the process, and a thread's wait for a CPU: how much of a
//! core the caller has used, not how long it took.

use std::time::Duration;

/// CPU time (user + system) the calling thread has used.
pub fn thread_time() -> Duration {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time (user + system) the whole process has used, all threads included.
pub fn process_time() -> Duration {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Time the calling thread has spent runnable but waiting for a CPU (the second field of
/// `/proc/thread-self/schedstat`): a thread that never sleeps is saturated even when another
/// process takes part of its CPU. Zero where schedstat is not available.
pub fn thread_wait() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

fn clock(id: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; these clocks always exist on Linux.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work_and_not_with_sleep() {
        // Spin until 20 ms of CPU have been used (the machine may be busy: bounded by 10 s).
        let before = thread_time();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut x = 0u64;
        while thread_time() - before < Duration::from_millis(20) {
            assert!(
                std::time::Instant::now() < deadline,
                "thread CPU time does not grow"
            );
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        let slept = thread_time();
        std::thread::sleep(Duration::from_millis(50));
        assert!(thread_time() - slept < Duration::from_millis(20));
        assert!(process_time() >= thread_time());
        // Sleeping is not waiting for a CPU.
        let waited = thread_wait();
        std::thread::sleep(Duration::from_millis(50));
        assert!(thread_wait() - waited < Duration::from_millis(40));
    }
}
