//! A disturbed machine, named: real processes hogging and sharing CPUs while the disturbance
//! is measured. These run on a machine other engineers' builds also use (on every CPU), so
//! each assertion compares figures of one interval with each other or with what the test's
//! own processes did, never with a quiet machine's. One test at a time: a hog of one test
//! would disturb another's.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use webscope_monitor::disturbance::{wait_for_quiet, Disturbance, Limits, Watched, QUIET_WINDOW};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Processes started by a test, each the leader of its own process group; dropping the
/// guard kills every group (shells' background children too) and reaps the leaders, also
/// when an assertion failed.
#[derive(Default)]
struct Kids(Vec<Child>);

impl Kids {
    /// Runs `sh -c script` pinned to `cpu` (its children inherit the pinning).
    fn spawn(&mut self, cpu: usize, script: &str) -> u32 {
        let mut command = Command::new("sh");
        command
            .args(["-c", script])
            .stdin(Stdio::null())
            .process_group(0);
        // SAFETY: sched_setaffinity is a system call, async-signal-safe, on the child itself.
        unsafe {
            command.pre_exec(move || {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("sh starts");
        let pid = child.id();
        self.0.push(child);
        pid
    }
}

impl Drop for Kids {
    fn drop(&mut self) {
        for child in &mut self.0 {
            kill_group(child.id());
            let _ = child.wait();
        }
    }
}

fn kill_group(pid: u32) {
    // SAFETY: a signal to a process group this test started.
    unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
}

const SPIN: &str = "while :; do :; done";

fn two_cpus() -> bool {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    if cpus < 2 {
        eprintln!("skipped: one CPU here, nothing to pin apart");
    }
    cpus >= 2
}

fn server_on_cpu0(pids: Vec<u32>) -> Watched {
    Watched {
        server: pids,
        server_cpus: Some(vec![0]),
        ..Watched::default()
    }
}

/// `pid`'s CPU time in seconds, or its threads' time on a CPU from schedstat (nanoseconds,
/// a source independent of the ticks the disturbance uses).
fn run_seconds(pid: u32) -> f64 {
    let process = procfs::process::Process::new(pid as i32).expect("process alive");
    process
        .tasks()
        .expect("tasks")
        .flatten()
        .filter_map(|t| t.schedstat().ok())
        .map(|s| s.sum_exec_runtime as f64 / 1e9)
        .sum()
}

fn measure(watched: &Watched, length: Duration) -> Disturbance {
    let sampler = Disturbance::start(watched).expect("start");
    std::thread::sleep(length);
    sampler.stop().expect("stop")
}

#[test]
fn a_hog_on_the_servers_cpu_is_named() {
    let _serial = serial();
    if !two_cpus() {
        return;
    }
    let mut kids = Kids::default();
    let server = kids.spawn(0, "exec sleep 60");
    let hog = kids.spawn(0, SPIN);
    let (hog_before, began) = (run_seconds(hog), Instant::now());
    let d = measure(&server_on_cpu0(vec![server]), Duration::from_secs(1));
    let hog_share = (run_seconds(hog) - hog_before) / began.elapsed().as_secs_f64();
    drop(kids);

    let cpu0 = &d.regions[0];
    assert_eq!(cpu0.cpus, [0]);
    // The hog alone fills CPU 0; with builds beside it CPU 0 is fuller still. Only steal
    // takes from that.
    assert!(cpu0.others + cpu0.steal > 0.5, "{d:#?}");
    assert!(
        cpu0.others >= hog_share - 0.05,
        "the hog's {hog_share:.2} of CPU 0 is inside others' {:.2}",
        cpu0.others
    );
    let why = d.beyond(&Limits::default()).expect("disturbed");
    assert!(why.contains("% of the server's CPU 0"), "{why}");
}

#[test]
fn the_servers_own_time_is_not_counted_as_others() {
    let _serial = serial();
    if !two_cpus() {
        return;
    }
    let mut kids = Kids::default();
    // Two busy processes, a shell and its background child: all of the server's.
    let shell = kids.spawn(0, &format!("({SPIN}) & {SPIN}"));
    let began = Instant::now();
    let server = loop {
        let tree: Vec<u32> = webscope_monitor::procs::tree(&[shell])
            .iter()
            .map(|p| p.pid)
            .collect();
        if tree.len() == 2 {
            break tree;
        }
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "no child: {tree:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let run_before: f64 = server.iter().map(|p| run_seconds(*p)).sum();
    let began = Instant::now();
    let d = measure(&server_on_cpu0(server.clone()), Duration::from_secs(1));
    let run: f64 = server.iter().map(|p| run_seconds(*p)).sum::<f64>() - run_before;
    let server_share = run / began.elapsed().as_secs_f64();
    drop(kids);

    let (cpu0, busy) = (&d.regions[0], d.cpus[0].busy);
    assert!(server_share > 0.15, "the server ran: {server_share:.2}");
    // Builds may share CPU 0 with the server; whatever they took, the server's own share is
    // taken out of busy before the rest is called others'. Ticks are 1/100 s: 3 % slack.
    assert!(
        cpu0.others <= busy - 0.8 * server_share + 0.03,
        "others {:.2}, busy {busy:.2}, server {server_share:.2}",
        cpu0.others
    );
    assert_eq!(
        d.server_wait.as_ref().unwrap().threads,
        2,
        "both processes' threads"
    );
}

#[test]
fn a_server_thread_sharing_its_cpu_waits_for_it() {
    let _serial = serial();
    if !two_cpus() {
        return;
    }
    let mut kids = Kids::default();
    let server = kids.spawn(0, SPIN);
    kids.spawn(0, SPIN);
    let d = measure(&server_on_cpu0(vec![server]), Duration::from_secs(1));
    drop(kids);

    let wait = d.server_wait.as_ref().unwrap();
    // Two always-runnable tasks on one CPU take turns: each waits about half the time.
    assert!(wait.largest > 0.3, "{wait:?}");
    assert_eq!(wait.thread.as_ref().unwrap().tid, server);
    let why = d.beyond(&Limits::default()).expect("disturbed");
    assert!(
        why.contains(&format!("a server thread ({server}/{server} sh)")),
        "{why}"
    );
}

/// Limits that only others on the server's CPU can exceed: the test makes that figure and
/// no other.
fn others_only() -> Limits {
    Limits {
        steal: 1.0,
        wait: 1.0,
        cpu_pressure: 1.0,
        io_pressure: 1.0,
        ..Limits::default()
    }
}

#[test]
fn waiting_for_quiet_gives_up_while_a_hog_stays() {
    let _serial = serial();
    if !two_cpus() {
        return;
    }
    let mut kids = Kids::default();
    let server = kids.spawn(0, "exec sleep 60");
    kids.spawn(0, SPIN);
    let most = Duration::from_millis(1500);
    let began = Instant::now();
    let (quiet, last) = wait_for_quiet(&server_on_cpu0(vec![server]), &others_only(), most)
        .expect("the server lives");
    let waited = began.elapsed();
    drop(kids);

    assert!(!quiet);
    assert!(waited >= most - QUIET_WINDOW, "{waited:?}");
    assert!(
        waited < most + Duration::from_secs(10),
        "bounded: {waited:?}"
    );
    assert!(
        last.seconds >= QUIET_WINDOW.as_secs_f64() * 0.99,
        "one window"
    );
    let why = last
        .beyond(&others_only())
        .expect("the last window's figures");
    assert!(why.contains("of the server's CPU 0"), "{why}");
}

#[test]
fn waiting_for_quiet_outlasts_a_hog_that_stops() {
    let _serial = serial();
    if !two_cpus() {
        return;
    }
    let mut kids = Kids::default();
    let server = kids.spawn(0, "exec sleep 60");
    let hog = kids.spawn(0, SPIN);
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        kill_group(hog);
        Instant::now()
    });
    let watched = server_on_cpu0(vec![server]);
    let most = Duration::from_secs(10);
    let (quiet, last) = wait_for_quiet(&watched, &others_only(), most).expect("the server lives");
    let (returned, killed) = (Instant::now(), killer.join().expect("killer"));
    drop(kids);

    if quiet {
        // While the hog ran CPU 0 was full: a quiet window can only have begun after it.
        assert!(last.beyond(&others_only()).is_none());
        let window_began = returned - Duration::from_secs_f64(last.seconds);
        assert!(
            window_began + Duration::from_millis(100) >= killed,
            "a quiet window {:?} before the hog stopped",
            killed - window_began
        );
    } else {
        // Other work kept CPU 0 busy after the hog: the machine is disturbed and the wait
        // ran out, naming it.
        let why = last.beyond(&others_only()).expect("figures past the limit");
        eprintln!("no quiet window within {most:?} on this machine: {why}");
        assert!(why.contains("of the server's CPU 0"), "{why}");
    }
}
