//! One measured run: the load generator against the target, the monitor beside it (the lab's
//! machine through procfs, the server's machine through node_exporter when it is remote), the
//! server's counters before and after, and the limits its verdict will compare against.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use webscope_load::{Config, Report};

use super::progress::Progress;
use super::record::{Measured, RunEnv};
use super::target::Target;

/// Runs one load `config` against `target` with the monitor beside it. `label` goes on the
/// live line.
pub fn measure(
    run_dir: &Path,
    config: Config,
    target: &Target,
    interrupt: &AtomicBool,
    bar: &Progress,
    label: &str,
) -> anyhow::Result<Measured> {
    measure_with(run_dir, config, target, interrupt, bar, label, false)
}

/// [`measure`], with a kernel profile (perf, through the monitor) when `profile` is set: the
/// monitor says in its summary why there is none when perf is missing or refused.
pub fn measure_with(
    run_dir: &Path,
    mut config: Config,
    target: &Target,
    interrupt: &AtomicBool,
    bar: &Progress,
    label: &str,
    profile: bool,
) -> anyhow::Result<Measured> {
    config.hlog = Some(run_dir.join("load.hlog"));
    speak(&mut config, target);
    let env = run_env(target);
    let before = target.snapshot();
    // The lab's machine: CPU, disks, the port's TCP states, the server's processes (and the
    // children they start during the run) with their threads.
    let monitor = webscope_monitor::spawn(webscope_monitor::Config {
        ports: target.port().into_iter().collect(),
        pids: target.pids.clone(),
        children: true,
        out: Some(run_dir.join("monitor")),
        profile,
        // 2 % of a core for the per-port TCP walks (the default is 0.3 %): at 14 000 sockets
        // in TIME_WAIT a walk costs about 7 ms, so a 3-s run still gets a curve of them.
        tcp_budget: 0.02,
        ..webscope_monitor::Config::default()
    });
    // The server's machine, when it is another one: through its node_exporter, once a second
    // (a scrape costs node_exporter tens of milliseconds of CPU).
    let remote: Vec<_> = target
        .server_metrics
        .iter()
        .enumerate()
        .map(|(i, url)| {
            webscope_monitor::spawn(webscope_monitor::Config {
                interval: webscope_monitor::NODE_EXPORTER_INTERVAL,
                node_exporter: Some(url.clone()),
                out: Some(run_dir.join(format!("server-monitor-{}", i + 1))),
                ..webscope_monitor::Config::default()
            })
        })
        .collect();
    let mut gauges = bar.gauges(&target.pids);
    let mut live = |interval: &webscope_load::IntervalReport| {
        bar.set_message(format!(
            "{label}: {}",
            Report::live_line(interval, 0.0).trim()
        ));
        if let Some(gauges) = gauges.as_mut() {
            let sample = monitor.as_ref().ok().and_then(|m| m.latest());
            bar.interval(label, interval, sample, target.port(), gauges);
        }
    };
    let report = webscope_load::run(&config, interrupt, &mut live)?;
    let after = target.snapshot();
    let summary = |m: Result<webscope_monitor::Running, webscope_monitor::Error>| match m
        .and_then(|m| m.stop())
    {
        Ok(results) => serde_json::to_value(&results.summary).ok(),
        Err(err) => Some(serde_json::json!({ "error": err.to_string() })),
    };
    let os = summary(monitor);
    let server_os = remote.into_iter().filter_map(summary).collect();
    let server = after.since(&before, report.duration_s);
    let load = serde_json::to_value(&report)?;
    bar.run_done(label, &load);
    if report.total.requests == 0 && interrupt.load(std::sync::atomic::Ordering::Relaxed) {
        anyhow::bail!("stopped by Ctrl-C before any response");
    }
    if report.total.requests == 0 {
        anyhow::bail!(
            "no response at all from {} ({} errors): is the server up?",
            target.base_url,
            report.total.errors.total
        );
    }
    Ok(Measured {
        load,
        server,
        os,
        server_os,
        env,
    })
}

/// Sets `config` to speak as `target` is spoken to: its TLS settings, HTTP/2.
pub fn speak(config: &mut Config, target: &Target) {
    config.tls = target.tls.clone();
    if target.http2 {
        // HTTP/2 keeps its connections: each client is one connection with one stream.
        config.http2 = Some(1);
        config.mode = webscope_load::Mode::KeepAlive;
    }
}

/// The limits a verdict compares against, as they are now.
pub fn run_env(target: &Target) -> RunEnv {
    let sysctl = |name: &str| std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}")).ok();
    let port_range = sysctl("ip_local_port_range").and_then(|text| {
        let mut it = text.split_whitespace().map(|v| v.parse::<f64>().ok());
        let (low, high) = (it.next()??, it.next()??);
        Some(high - low + 1.0)
    });
    let tw_buckets = sysctl("tcp_max_tw_buckets").and_then(|t| t.trim().parse().ok());
    let mut link_mbit = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/sys/class/net") {
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            // Virtual interfaces (loopback, veth without a peer speed) say -1 or refuse.
            let speed = std::fs::read_to_string(entry.path().join("speed"))
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .filter(|s| *s > 0.0);
            if let Some(speed) = speed {
                link_mbit.insert(name, speed);
            }
        }
    }
    let processes = target.processes();
    RunEnv {
        server_cpus: target.server_cpus(&processes),
        server_processes: processes
            .iter()
            .map(|p| format!("{} {}", p.pid, p.comm))
            .collect(),
        port_range,
        tw_buckets,
        link_mbit,
    }
}
