use super::*;

const UNITS: Units = Units {
    ticks_per_s: 100.0,
    page_bytes: 4096.0,
};

fn thread(run_ms: u64, wait_ms: u64, utime: u64) -> ThreadReading {
    ThreadReading {
        comm: "worker".into(),
        utime,
        stime: 0,
        vol_cs: run_ms,
        invol_cs: wait_ms,
        run_ns: run_ms * 1_000_000,
        wait_ns: wait_ms * 1_000_000,
    }
}

fn process(threads: &[(i32, ThreadReading)], utime: u64) -> ProcessReading {
    ProcessReading {
        comm: "server".into(),
        starttime: 1,
        utime,
        stime: 0,
        rss_pages: 256,
        threads: threads.iter().cloned().collect(),
        minflt: 0,
        majflt: 0,
        fds: Some(12),
    }
}

#[test]
fn thread_time_splits_into_running_waiting_and_the_rest() {
    let row = thread_row(1, 2, &thread(0, 0, 0), &thread(300, 500, 30), 1.0, UNITS);
    assert_eq!(row.key, ["1", "2", "worker"]);
    assert!((row.values[2] - 30.0).abs() < 1e-9);
    assert!((row.values[3] - 50.0).abs() < 1e-9);
    assert!((row.values[4] - 20.0).abs() < 1e-9);
    assert!(
        (row.values[0] - 30.0).abs() < 1e-9,
        "30 ticks of 10 ms in 1 s"
    );
}

#[test]
fn process_sums_threads_present_at_both_readings() {
    let before = process(&[(10, thread(0, 0, 0)), (11, thread(0, 0, 0))], 0);
    // Thread 12 is new: its time since it started is not in this interval's sums.
    let after = process(
        &[
            (10, thread(200, 100, 0)),
            (11, thread(100, 50, 0)),
            (12, thread(900, 900, 0)),
        ],
        50,
    );
    let row = process_row(10, &before, &after, 0.5, UNITS);
    assert!(
        (row.values[3] - 60.0).abs() < 1e-9,
        "300 ms running in 0.5 s"
    );
    assert!((row.values[4] - 30.0).abs() < 1e-9);
    assert!(
        (row.values[2] - 100.0).abs() < 1e-9,
        "50 ticks in 0.5 s is one core"
    );
    assert_eq!(row.values[5], 1.0, "256 pages of 4 KiB");
    assert_eq!(row.values[6], 12.0);
    assert_eq!(row.values[7], 3.0);
    assert_eq!(row.values.len(), PROCESS.columns.len());
}

#[test]
fn context_switches_are_read_from_status() {
    let status = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
    assert_eq!(context_switches(status), (12, 3));
    assert_eq!(context_switches("Name: x\n"), (0, 0));
}

#[test]
fn own_process_and_threads_are_read() {
    let mut processes = Processes::new(&[std::process::id()], false).unwrap();
    let mut problems = Vec::new();
    let reading = processes.watched[0].read(&mut problems).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert!(!reading.threads.is_empty());
    assert!(reading.fds.unwrap() >= 3);
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    // This thread has run (others may be too new to have been scheduled yet).
    assert!(reading.threads[&me].run_ns > 0, "{reading:?}");
}

#[test]
fn a_pid_that_does_not_exist_is_refused_at_start() {
    // PIDs are below 2^22 on Linux.
    assert!(Processes::new(&[(1 << 22) + 5], false).is_err());
    assert!(Processes::new(&[std::process::id()], true).is_ok());
}

#[test]
fn children_that_start_mid_run_are_followed_and_summed() {
    // The shell starts its second child a moment after the first sample.
    let mut shell = std::process::Command::new("sh")
        .args(["-c", "sleep 0.3; sleep 5"])
        .spawn()
        .unwrap();
    let root = shell.id();
    let mut processes = Processes::new(&[root], true).unwrap();
    let mut notes = crate::notes::Notes::default();
    let mut out = Vec::new();
    let mut ctx = Ctx {
        t: 0.0,
        dt: 0.0,
        notes: &mut notes,
    };
    processes.sample(&mut ctx, &mut out).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    let mut ctx = Ctx {
        t: 0.6,
        dt: 0.6,
        notes: &mut notes,
    };
    processes.sample(&mut ctx, &mut out).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut ctx = Ctx {
        t: 0.8,
        dt: 0.2,
        notes: &mut notes,
    };
    out.clear();
    processes.sample(&mut ctx, &mut out).unwrap();
    let _ = shell.kill();
    let _ = shell.wait();
    let rows = &out.iter().find(|g| g.group.name == "process").unwrap().rows;
    let names: Vec<String> = rows.iter().map(|r| r.key_name()).collect();
    assert!(
        names.iter().any(|n| n.ends_with("/sleep")),
        "the late child: {names:?}"
    );
    assert!(names.contains(&"all/all".to_string()), "{names:?}");
    assert!(
        notes.all().is_empty(),
        "the first sleep ending is no news: {notes:?}"
    );
}
