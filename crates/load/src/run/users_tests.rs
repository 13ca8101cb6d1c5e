//! Users end to end against a slow tiny server: a page's objects go out in parallel after the
//! page, page views and sessions are counted, think times are kept as configured whatever
//! the server does, and what a log said differently is a page view's error.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;

use super::*;
use crate::replay::ReplayRequest;
use crate::users::{Dist, Logged, Request, Session, SessionModel, Sessions, Users, View};
use crate::Target;

/// What the slow server saw: the request paths in arrival order, and the most object
/// requests (paths starting `/o`) it held at once.
#[derive(Default)]
struct Seen {
    paths: Mutex<Vec<String>>,
    objects_now: AtomicUsize,
    objects_most: AtomicUsize,
}

/// A keep-alive server that answers each request after `delay`, 200 with 10 bytes, but 404
/// for paths starting `/missing`.
fn slow(delay: Duration) -> (std::net::SocketAddr, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let keep = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let seen = Arc::clone(&keep);
            std::thread::spawn(move || answer(&mut stream, delay, &seen));
        }
    });
    (addr, seen)
}

fn answer(stream: &mut std::net::TcpStream, delay: Duration, seen: &Seen) {
    let mut buf = [0u8; 4096];
    let mut pending = Vec::new();
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_string();
            pending.drain(..end + 4);
            let path = head.split(' ').nth(1).unwrap_or("").to_string();
            seen.paths.lock().unwrap().push(path.clone());
            let object = path.starts_with("/o");
            if object {
                let now = seen.objects_now.fetch_add(1, Ordering::SeqCst) + 1;
                seen.objects_most.fetch_max(now, Ordering::SeqCst);
            }
            std::thread::sleep(delay);
            if object {
                seen.objects_now.fetch_sub(1, Ordering::SeqCst);
            }
            let status = if path.starts_with("/missing") {
                "404 Not Found"
            } else {
                "200 OK"
            };
            let reply = format!("HTTP/1.1 {status}\r\nContent-Length: 10\r\n\r\n0123456789");
            if stream.write_all(reply.as_bytes()).is_err() {
                return;
            }
        }
    }
}

fn get(target: &str) -> ReplayRequest {
    ReplayRequest {
        method: "GET".into(),
        target: target.into(),
        range: None,
        not_modified: false,
    }
}

/// A users run on `addr` of the sessions `sessions` over the distinct requests `requests`.
fn config(addr: std::net::SocketAddr, requests: &[&str], users: Users) -> Config {
    let requests: Vec<ReplayRequest> = requests.iter().map(|r| get(r)).collect();
    let base = format!("http://{addr}/");
    let target = Target::logged(&base, &requests, "users", "with users").unwrap();
    let mut config = Config::new(target);
    config.threads = 1;
    config.interval = Duration::from_millis(200);
    config.users = Some(Arc::new(users));
    config
}

fn view(page: u32, objects: &[u32], think_s: Option<f64>, logged: Option<u16>) -> View {
    let request = |request| Request { request, logged };
    View {
        page: request(page),
        objects: objects.iter().map(|&o| request(o)).collect(),
        think_s,
    }
}

fn logged(sessions: Vec<Session>) -> Sessions {
    Sessions::Logged(Logged {
        population: sessions.len() as u64,
        sessions,
        source: "a test".into(),
        note: None,
        think_scale: 1.0,
    })
}

#[test]
fn a_pages_objects_go_out_together_after_the_page() {
    let (addr, seen) = slow(Duration::from_millis(100));
    // One user, one session of one view: /p then /o1 /o2 /o3, then 0.2 s of thought.
    let session = Session {
        views: vec![view(0, &[1, 2, 3], Some(0.2), None)],
    };
    let users = Users {
        count: 1,
        connections: 6,
        sessions: logged(vec![session]),
        ramp_up: Duration::ZERO,
    };
    let mut config = config(addr, &["/p", "/o1", "/o2", "/o3"], users);
    config.duration = Duration::from_millis(900);
    config.drain = Duration::from_secs(2);
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let paths = seen.paths.lock().unwrap().clone();
    // Each view: its page first, then its three objects.
    assert!(paths.len() >= 4, "{paths:?}");
    for (k, chunk) in paths.chunks(4).enumerate() {
        assert_eq!(chunk[0], "/p", "view {k}: {paths:?}");
        let mut objects: Vec<&str> = chunk[1..].iter().map(String::as_str).collect();
        objects.sort_unstable();
        assert!(objects.iter().all(|o| o.starts_with("/o")), "{paths:?}");
    }
    // Over parallel connections: the server held all three at once.
    assert_eq!(seen.objects_most.load(Ordering::SeqCst), 3);
    let users = report.users.as_ref().unwrap();
    assert_eq!(users.page_views, (paths.len() / 4) as u64, "{users:?}");
    assert!(users.sessions >= 1);
    assert_eq!(users.page_view_errors, 0);
    // A page load is at least the page's answer and then one object's.
    assert!(users.page_load_us.min >= 200_000.0, "{users:?}");
    assert_eq!(report.total.requests, paths.len() as u64);
}

#[test]
fn think_times_are_kept_as_configured_whatever_the_server_does() {
    let (addr, _) = slow(Duration::from_millis(30));
    let think = Dist::Pareto {
        alpha: 1.5,
        scale: 0.1,
        max: Some(1.0),
    };
    let users = Users {
        count: 20,
        connections: 6,
        sessions: Sessions::Model(SessionModel {
            views: Dist::Geometric { mean: 3.0 },
            objects: Dist::Constant { value: 2.0 },
            think,
            page: None,
        }),
        ramp_up: Duration::from_millis(300),
    };
    let mut config = config(addr, &["/x"], users);
    config.duration = Duration::from_secs(3);
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let users = report.users.as_ref().unwrap();
    assert!(users.think_us.count >= 100, "{users:?}");
    // The kept think times against the configured distribution: the Kolmogorov-Smirnov
    // distance, within the 0.1 % critical value.
    let (n, distance) = (
        users.think_us.count as f64,
        users.think_ks_distance.unwrap(),
    );
    let critical = 1.95 / n.sqrt();
    assert!(
        distance < critical,
        "KS distance {distance:.3} over {n} think times, critical {critical:.3}"
    );
    // The page loads took the server's 30 ms twice (page, then objects), not the thinks.
    assert!(users.page_load_us.p50 >= 60_000.0, "{users:?}");
    assert!(
        users.page_load_us.p50 < 100_000.0 + users.think_us.p50,
        "{users:?}"
    );
}

#[test]
fn a_status_the_log_did_not_give_is_a_page_view_error() {
    let (addr, _) = slow(Duration::ZERO);
    // /p logged 200 and answered 200; /missing logged 200 and answered 404: an error. A
    // second session logged /missing as 404: as the log had it, no error.
    let wrong = Session {
        views: vec![view(0, &[1], Some(0.05), Some(200))],
    };
    let right = Session {
        views: vec![View {
            page: Request {
                request: 0,
                logged: Some(200),
            },
            objects: vec![Request {
                request: 1,
                logged: Some(404),
            }],
            think_s: Some(0.05),
        }],
    };
    for (session, errors) in [(wrong, true), (right, false)] {
        let users = Users {
            count: 2,
            connections: 6,
            sessions: logged(vec![session]),
            ramp_up: Duration::ZERO,
        };
        let mut config = config(addr, &["/p", "/missing"], users);
        config.duration = Duration::from_millis(500);
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        let users = report.users.as_ref().unwrap();
        assert!(users.page_views >= 2, "{users:?}");
        let expected = if errors { users.page_views } else { 0 };
        assert_eq!(users.page_view_errors, expected, "{users:?}");
    }
}

#[test]
fn users_are_checked() {
    let (addr, _) = slow(Duration::ZERO);
    let users = |count| Users {
        count,
        connections: 6,
        sessions: Sessions::Model(SessionModel::surge()),
        ramp_up: Duration::ZERO,
    };
    let mut c = config(addr, &["/x"], users(0));
    assert!(c
        .check()
        .unwrap_err()
        .to_string()
        .contains("--users must be at least 1"));
    c.users = Some(Arc::new(users(1)));
    c.threads = 2;
    assert!(c
        .check()
        .unwrap_err()
        .to_string()
        .contains("give -t 1 or fewer"));
    c.threads = 1;
    c.pacing = Pacing::Open {
        rate: 10.0,
        arrivals: crate::Arrivals::Constant,
        max_connections: 10,
    };
    assert!(c.check().unwrap_err().to_string().contains("drop --rate"));
}

#[test]
fn regression_52_a_users_runs_segments_merge_their_users_figures_exactly() {
    let (addr, _) = slow(Duration::from_millis(2));
    let session = Session {
        views: vec![
            view(0, &[1], Some(0.02), None),
            view(2, &[], Some(0.01), None),
        ],
    };
    let users = Users {
        count: 4,
        connections: 2,
        sessions: logged(vec![session]),
        ramp_up: Duration::ZERO,
    };
    let mut config = config(addr, &["/p", "/o", "/q"], users);
    config.duration = Duration::from_millis(800);
    let dir = tempfile::tempdir().unwrap();
    let parts = super::segments_tests::segments(&config, 2, dir.path());
    let of = |p: &crate::Part| p.report.users.clone().unwrap();
    for p in &parts {
        let u = of(p);
        assert!(u.histograms.is_some(), "{u:?}");
        assert!(u.page_views > 0, "{u:?}");
    }
    let merged = crate::merge(&parts, None).unwrap();
    let users = merged.users.expect("the merged users figures");
    // Before: the first segment's figures alone (or none).
    let views: u64 = parts.iter().map(|p| of(p).page_views).sum();
    assert_eq!(users.page_views, views);
    assert_eq!(
        users.sessions,
        parts.iter().map(|p| of(p).sessions).sum::<u64>()
    );
    assert_eq!(
        users.think_us.count,
        parts.iter().map(|p| of(p).think_us.count).sum::<u64>()
    );
    assert_eq!(users.users, 4);
    assert!(users.histograms.is_none());
    assert!((users.page_views_per_s - views as f64 / merged.duration_s).abs() < 1e-9);
    // The merged page loads: the largest is the largest of the segments'.
    let max = parts
        .iter()
        .map(|p| of(p).page_load_us.max)
        .fold(0.0, f64::max);
    assert_eq!(users.page_load_us.max, max);
    // Per interval too (issue 52: merged intervals had no users figures): the segments'
    // page views and users added, their page loads from the logs' page lines, which
    // together are the run's page loads; and the merged log carries them.
    let merged_log = dir.path().join("merged.hlog");
    let merged = crate::merge(&parts, Some(&merged_log)).unwrap();
    let per: Vec<&crate::report::users::IntervalUsers> = merged
        .intervals
        .iter()
        .map(|i| i.users.as_ref().expect("each merged interval's users"))
        .collect();
    for (i, u) in per.iter().enumerate() {
        let of_parts = |f: &dyn Fn(&crate::report::users::IntervalUsers) -> u64| -> u64 {
            parts
                .iter()
                .filter_map(|p| p.report.intervals.get(i)?.users.as_ref())
                .map(f)
                .sum()
        };
        assert_eq!(u.page_views, of_parts(&|u| u.page_views), "interval {i}");
        assert_eq!(
            u.active as u64,
            of_parts(&|u| u.active as u64),
            "interval {i}"
        );
        assert_eq!(
            u.page_load_us.count,
            of_parts(&|u| u.page_load_us.count),
            "interval {i}"
        );
    }
    assert_eq!(per.last().unwrap().active, 4);
    let loads: u64 = per.iter().map(|u| u.page_load_us.count).sum();
    assert!(loads > 0);
    assert_eq!(loads, users.page_load_us.count);
    let most = per.iter().map(|u| u.page_load_us.max).fold(0.0, f64::max);
    assert_eq!(most, users.page_load_us.max);
    let logged = crate::hlog::read_intervals(&merged_log, Some(crate::slo::PAGE)).unwrap();
    assert_eq!(logged.len(), per.len());
    let logged_loads: u64 = logged.iter().map(|l| l.histogram.len()).sum();
    assert_eq!(logged_loads, loads);
    // A segment's log without its page lines (another run's, or an older build's) is
    // refused, not read as no page loads.
    let mut cut: Vec<crate::Part> = parts
        .iter()
        .map(|p| crate::Part {
            report: p.report.clone(),
            log: p.log.clone(),
        })
        .collect();
    let text = String::from_utf8(cut[0].log.clone()).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with("Tag=page,"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(kept.len(), text.len(), "the log has page lines");
    cut[0].log = kept.into_bytes();
    let err = crate::merge(&cut, None).unwrap_err().to_string();
    assert!(err.contains("has no page loads for interval"), "{err}");
    // A segment without its histograms is refused in one line.
    let mut old = parts;
    if let Some(u) = old[1].report.users.as_mut() {
        u.histograms = None;
    }
    let err = crate::merge(&old, None).unwrap_err().to_string();
    assert!(
        err.contains("the users figures: its users figures have no histograms"),
        "{err}"
    );
}
