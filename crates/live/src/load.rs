//! `load --live`: the page for one load run, with a monitor beside it for the machine's CPU,
//! the target port's TCP states and, when the server is on this machine, its processes' CPU.

use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use webscope_load::{Config, IntervalReport, Report};

use std::sync::Mutex;

use super::{Cost, Final, Gauges, Live, Point};

/// The live page of one `load --live` run: the page, the gauges its CPU figures come from,
/// and the monitor it started for the port's TCP states (None when the server is elsewhere).
pub struct LoadPage {
    live: Live,
    gauges: Mutex<Gauges>,
    monitor: Option<webscope_monitor::Running>,
    port: Option<u16>,
    duration_s: f64,
}

impl LoadPage {
    /// Starts the page on `addr` and says where it is (stderr: stdout is the run's summary).
    pub fn start(addr: &str, config: &Config) -> anyhow::Result<LoadPage> {
        let title = format!("webscope load: {}", config.target.description);
        let live = Live::start(addr, "load", &title, config.interval)?;
        eprintln!("webscope load: live page at {}", live.url());
        let target = config.target.addr;
        // A server on this machine: an address we could bind is one of ours.
        let local = target.ip().is_loopback() || TcpListener::bind((target.ip(), 0)).is_ok();
        let port = local.then_some(target.port());
        let pids = port
            .and_then(|p| webscope_monitor::procs::listeners(p).ok())
            .map(|found| webscope_monitor::procs::roots(&found))
            .unwrap_or_default();
        let gauges = Mutex::new(Gauges::new(pids));
        // For the TCP states of the port only: the CPU figures are the gauges'.
        let monitor = port.and_then(|port| {
            webscope_monitor::spawn(webscope_monitor::Config {
                interval: config.interval,
                ports: vec![port],
                out: None,
                ..webscope_monitor::Config::default()
            })
            .map_err(|e| eprintln!("webscope load: the live page has no TCP states: {e}"))
            .ok()
        });
        Ok(LoadPage {
            live,
            gauges,
            monitor,
            port,
            duration_s: config.duration.as_secs_f64(),
        })
    }

    /// One completed interval.
    pub fn interval(&self, interval: &IntervalReport) {
        let t = interval.start_s + interval.duration_s;
        let mut point = Point::of(interval, t, "");
        if let Ok(mut gauges) = self.gauges.lock() {
            point = point.with_cpu(&mut gauges);
        }
        if let Some(sample) = self.monitor.as_ref().and_then(|m| m.latest()) {
            point = point.with_tcp(&sample, self.port);
        }
        let left = (self.duration_s - t).max(0.0);
        self.live
            .push(point, interval.requests, interval.errors, Some(left), None);
    }

    /// The run is over: its final figures go up, the page stays `linger` (or until Ctrl-C),
    /// and the cost of the page and its monitor is returned.
    pub fn finish(
        self,
        report: &Report,
        written_to: Option<String>,
        linger: Duration,
        interrupt: &AtomicBool,
    ) -> Cost {
        let monitor_cpu_s = self
            .monitor
            .and_then(|m| m.stop().ok())
            .map_or(0.0, |r| r.summary.cost.sampler_cpu_s);
        self.live.update(|state| {
            state.done = Some(Final::of(report));
            state.finished = true;
            state.interrupted = report.interrupted;
            state.written_to = written_to;
            state.time_left_s = Some(0.0);
        });
        let mut cost = self.live.linger(linger, interrupt);
        cost.monitor_cpu_s = monitor_cpu_s;
        cost
    }
}
