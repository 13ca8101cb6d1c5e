//! The accept-queue wait of a run's connections, from the monitor's kernel module (#49): each
//! connection's time from the handshake's completion (when the kernel queued it on the
//! server's listener) to the server taking it, as the sweep's rows, the verdicts and the
//! request's time split read it. Present only where the lab asked for the module and it
//! loaded (root, a kernel with BTF, a build with the `kernel` feature); where it is absent the
//! page says why once ([`why_absent`]), and a lab stored before it renders as it did.
//! Not for judging (the bottleneck rules weigh [`QueueWait`]) nor for measuring (the monitor).

use webscope_report::human::{plural, sig3};
use webscope_report::svg::{Axis, BarChart};
use webscope_report::Block;

pub use webscope_bottleneck::os_figures::{queue_wait as of, QueueWait};
use webscope_record::RunRecord;

/// Why no run of `runs` has an accept-queue wait, said once: the lab did not ask for the
/// kernel module (`--no-kernel`, a build without it), it could not load (the monitor's one
/// line), or it saw no connection leave the queue. None when a run has one, and when the runs
/// say nothing of it (a lab stored before the module existed).
pub fn why_absent<'a>(runs: impl IntoIterator<Item = &'a RunRecord> + Clone) -> Option<String> {
    if runs.clone().into_iter().any(|r| of(r).is_some()) {
        return None;
    }
    runs.into_iter().find_map(|run| {
        if let Some(why) = &run.env.no_kernel {
            return Some(why.clone());
        }
        let os = run.local_os()?;
        if let Some(why) = &os.kernel_error {
            return Some(why.clone());
        }
        let port = os.ports.first()?;
        os.kernel.as_ref().map(|_| {
            format!("the kernel module saw no connection leave port {port}'s accept queue (a server on another machine is not seen from this one)")
        })
    })
}

/// The sweep's note where the column is absent, once.
pub fn absent_note<'a>(runs: impl IntoIterator<Item = &'a RunRecord> + Clone) -> Option<Block> {
    why_absent(runs).map(|why| {
        Block::Text(format!(
            "No accept-queue wait in these runs (the monitor's kernel module): {why}."
        ))
    })
}

/// One point of a sweep as the time split reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitPoint {
    /// Clients.
    pub x: f64,
    /// The mean response time, milliseconds.
    pub mean_ms: f64,
    /// The server's own mean time per request, where it gives it (the embedded server).
    pub server_ms: Option<f64>,
    /// The run's accept-queue wait.
    pub queue_wait: Option<QueueWait>,
}

/// A number of clients with its noun: `1 client`, `64 clients`.
fn clients(x: f64) -> String {
    if x.fract() == 0.0 && x >= 0.0 {
        plural(x as u64, "client")
    } else {
        format!("{} clients", sig3(x))
    }
}

/// A wait in milliseconds as a cell: three significant figures.
pub fn ms(v: f64) -> String {
    sig3(v)
}

/// The table cell "p50/p99" of a run's wait, `-` where it has none.
pub fn cell(q: Option<&QueueWait>) -> String {
    q.map_or("-".into(), |q| {
        format!("{}/{}", ms(q.wait.p50_ms), ms(q.wait.p99_ms))
    })
}

/// The request's time split as WebMonitor drew it, per point: the wait in the listen queue
/// (per request), the server's own time (its phases, where the server gives them: the
/// embedded one), and the rest of the mean response time (both machines' TCP stacks, the
/// network, the generator). Only when every point has the queue wait. `knee`: the sweep's
/// saturation point, where the reading says how the wait grew.
pub fn time_split(points: &[SplitPoint], knee: Option<f64>) -> Option<Block> {
    let waits: Vec<&QueueWait> = points
        .iter()
        .map(|p| p.queue_wait.as_ref())
        .collect::<Option<_>>()?;
    if points.is_empty() {
        return None;
    }
    let server = points.iter().all(|p| p.server_ms.is_some());
    let queue: Vec<f64> = waits.iter().map(|q| q.per_request_ms).collect();
    let own: Vec<f64> = points
        .iter()
        .map(|p| {
            if server {
                p.server_ms.unwrap_or(0.0)
            } else {
                0.0
            }
        })
        .collect();
    let rest: Vec<f64> = points
        .iter()
        .zip(queue.iter().zip(&own))
        .map(|(p, (q, s))| (p.mean_ms - q - s).max(0.0))
        .collect();
    let mut series = vec![("accept queue".to_string(), queue.clone())];
    if server {
        series.push(("server (parse, process, log)".into(), own));
    }
    series.push(("the rest".into(), rest));
    let share = |i: usize| {
        let mean = points[i].mean_ms;
        if mean > 0.0 {
            100.0 * queue[i] / mean
        } else {
            0.0
        }
    };
    let last = points.len() - 1;
    let parts = if server {
        "the server's own time (its phases), and the rest (both machines' TCP, the network, the generator)"
    } else {
        "and the rest (the server's time, which it does not report, both machines' TCP, the network, the generator)"
    };
    let mut reading = format!(
        "Where a request's mean response time goes, as WebMonitor split it: waiting in the server's listen queue (each connection's wait spread over its requests), {parts}. The queue wait is {} % of the mean at {} and {} % at {}.",
        sig3(share(0)),
        clients(points[0].x),
        sig3(share(last)),
        clients(points[last].x)
    );
    // Its p99 per connection at the first point, the knee and the last, each said once.
    let at = |i: usize| {
        format!(
            "{} ms at {}",
            ms(waits[i].wait.p99_ms),
            clients(points[i].x)
        )
    };
    let mut said = vec![at(0)];
    if let Some(k) = knee.and_then(|k| points.iter().position(|p| p.x == k)) {
        if k > 0 {
            said.push(format!("{} (the knee)", at(k)));
        } else {
            said[0] += " (the knee)";
        }
        if k < last {
            said.push(at(last));
        }
    } else if last > 0 {
        said.push(at(last));
    }
    reading.push_str(&format!(
        " A connection's wait at p99: {}.",
        said.join(", ")
    ));
    Some(Block::Chart {
        svg: BarChart {
            title: "A request's time: listen queue, server, the rest (means)".into(),
            categories: points.iter().map(|p| format!("{}", p.x)).collect(),
            y: Axis::linear("ms"),
            series,
            stacked: true,
        }
        .to_svg(),
        reading,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::point::test_point;
    use webscope_monitor::kernel::Latency;

    fn split(x: f64, mean_ms: f64, per_request: f64, p99: f64) -> SplitPoint {
        SplitPoint {
            x,
            mean_ms,
            server_ms: Some(0.2),
            queue_wait: Some(QueueWait {
                port: 80,
                wait: Latency {
                    count: 10,
                    mean_ms: per_request,
                    p50_ms: per_request,
                    p90_ms: p99,
                    p99_ms: p99,
                    p999_ms: p99,
                    max_ms: p99,
                },
                per_request_ms: per_request,
            }),
        }
    }

    fn sampled(v: serde_json::Value) -> webscope_record::Sampled {
        serde_json::from_value(v).expect("a monitor summary")
    }

    fn kernel_os(port: u16, waits: Option<(u64, f64, f64, f64)>) -> webscope_record::Sampled {
        let wait = waits.map(|(count, mean, p50, p99)| {
            serde_json::json!({"count": count, "mean_ms": mean, "p50_ms": p50, "p90_ms": p99,
                "p99_ms": p99, "p999_ms": p99, "max_ms": p99})
        });
        sampled(serde_json::json!({
            "ports": [port],
            "kernel": {"dequeue": "", "unattached": [], "runq": {"pids": [], "untimed": 0, "wait": null},
                "ports": [{"port": port, "established": 10, "accepted_syscall": 10, "accepted_read": 0,
                    "closed": 10, "closed_unseen": 0, "closed_waiting": 0, "time_wait": 0,
                    "retrans_segs": 0, "retransmissions": 0, "rtos": 0, "synack_retrans": 0,
                    "overflows_ack": 0, "listen_drops": 0, "conns_retransmitting": 0,
                    "most_retrans_per_conn": 0, "transitions": {}, "accept_wait": wait,
                    "lifetime": null}]},
        }))
    }

    #[test]
    fn a_keep_alive_connection_spreads_its_wait_over_its_requests() {
        let mut p = test_point(4.0, 1000.0, 0.3, Some(0.5));
        p.run.os = Some(kernel_os(8080, Some((4, 2.0, 1.5, 4.0))));
        // 4 connections waited 2 ms each for 1000 requests: 8 µs a request.
        p.run.load = webscope_record::load_json(
            serde_json::json!({"duration_s": 1.0, "status_codes": {"200": 1000}}),
        );
        let q = of(&p.run).expect("a wait");
        assert_eq!(q.port, 8080);
        assert!((q.per_request_ms - 0.008).abs() < 1e-12, "{q:?}");
        assert_eq!(cell(Some(&q)), "1.50/4");
        assert_eq!(cell(None), "-");
    }

    #[test]
    fn the_absent_column_is_said_once_with_why_and_old_labs_say_nothing() {
        let mut p = test_point(1.0, 100.0, 0.3, Some(0.5)).run;
        assert_eq!(why_absent([&p]), None, "a stored lab");
        p.env.no_kernel = Some("the lab ran with --no-kernel".into());
        assert_eq!(
            why_absent([&p]).as_deref(),
            Some("the lab ran with --no-kernel")
        );
        p.env.no_kernel = None;
        p.os = Some(sampled(serde_json::json!({"ports": [80], "kernel": null,
            "kernel_error": "no kernel figures: not permitted"})));
        assert_eq!(
            why_absent([&p]).as_deref(),
            Some("no kernel figures: not permitted")
        );
        p.os = Some(kernel_os(80, None));
        assert!(why_absent([&p])
            .unwrap()
            .contains("no connection leave port 80"));
        let mut q = p.clone();
        q.os = Some(kernel_os(80, Some((1, 1.0, 1.0, 1.0))));
        assert_eq!(why_absent([&p, &q]), None);
    }

    #[test]
    fn the_time_split_adds_up_to_the_mean_and_quotes_the_knee() {
        let mut points = vec![
            split(1.0, 2.0, 0.01, 0.5),
            split(2.0, 4.0, 0.4, 4.1),
            split(4.0, 8.0, 1.5, 9.0),
        ];
        let Some(Block::Chart { reading, .. }) = time_split(&points, Some(2.0)) else {
            panic!("no split");
        };
        assert!(
            reading.contains("0.500 % of the mean at 1 client")
                && reading.contains("18.8 % at 4 clients")
                && reading.contains(
                    "at p99: 0.500 ms at 1 client, 4.10 ms at 2 clients (the knee), 9 ms at 4 clients."
                ),
            "{reading}"
        );
        let Some(Block::Chart { reading, .. }) = time_split(&points, Some(4.0)) else {
            panic!("no split");
        };
        assert!(reading.contains("at p99: 0.500 ms at 1 client, 9 ms at 4 clients (the knee)."));
        points[1].queue_wait = None;
        assert!(time_split(&points, Some(2.0)).is_none());
    }
}
