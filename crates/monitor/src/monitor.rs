//! The monitor itself: start (baseline readings, perf), sample (every source, rates since the
//! previous sample, CSV rows), stop (profile, `monitor.json`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::cost::CostBook;
use crate::csv::{number, CsvFiles};
use crate::kernel::{Kernel, KERNEL, KERNEL_STATES, RUNQ};
use crate::notes::Notes;
use crate::profile::perf::Recording;
use crate::profile::Profile;
use crate::sources::ports::{Ports, LISTEN, PORTS};
use crate::sources::process::{Processes, PROCESS, THREADS};
use crate::sources::{cpu, disk, memory, net, snmp, sockstat, Ctx, Source};
use crate::summary::{Accumulator, Host, Summary};
use crate::table::{Group, GroupRows, Sample};
use crate::tcp::TcpTable;
use crate::{Config, Error, Note};

/// Every group the monitor can write, in the order of the live line and listings.
pub static GROUPS: [&Group; 15] = [
    &cpu::CPU,
    &cpu::SYSTEM,
    &memory::MEMORY,
    &disk::DISK,
    &net::NET,
    &snmp::TCP,
    &sockstat::SOCKETS,
    &PORTS,
    &LISTEN,
    &PROCESS,
    &THREADS,
    &KERNEL,
    &KERNEL_STATES,
    &RUNQ,
    &PROFILE_GROUP,
];

/// The profile's file (written at the end, not a time series).
static PROFILE_GROUP: Group = Group {
    name: "profile",
    about: "with --profile: share of all samples and of kernel samples per category, and the top functions of each",
    keys: &["category", "symbol"],
    columns: &["samples", "pct", "kernel_pct", "pct_of_category"],
};

/// A running monitor. [`Monitor::start`] takes the baseline readings; each
/// [`Monitor::sample`] then reads everything again and returns rates over the time since the
/// previous one; [`Monitor::stop`] ends the run and writes its summary.
pub struct Monitor {
    config: Config,
    sources: Vec<Box<dyn Source>>,
    ports: Option<Ports>,
    kernel: Option<Kernel>,
    kernel_error: Option<String>,
    notes: Notes,
    csv: Option<CsvFiles>,
    stats: Accumulator,
    cost: CostBook,
    started: Instant,
    started_unix: f64,
    last: Instant,
    samples: u64,
    latest: BTreeMap<&'static str, GroupRows>,
    recording: Option<Recording>,
    /// The perf.data to remove at the end, when there is no output directory to keep it in.
    perf_temporary: Option<PathBuf>,
    profile_error: Option<String>,
    interrupted: bool,
}

/// What a finished run leaves: its summary (also in `monitor.json`) and the files written.
#[derive(Debug)]
pub struct Results {
    /// The summary.
    pub summary: Summary,
    /// The files written in the output directory (none without one).
    pub files: Vec<PathBuf>,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn out_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Out {
        path: path.to_path_buf(),
        source,
    }
}

/// Makes the output directory, and removes what an earlier run left there, so that nothing
/// stale looks like part of this run.
fn prepare_out(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(out_error(dir))?;
    let stale = GROUPS.iter().map(|g| format!("{}.csv", g.name)).chain([
        "monitor.json".to_string(),
        "perf.data".to_string(),
        crate::kernel::hlog::HLOG.to_string(),
    ]);
    for name in stale {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(out_error(&path)(e)),
        }
    }
    Ok(())
}

impl Monitor {
    /// Checks the settings, opens the sources, takes the baseline readings and starts perf
    /// (with `profile`). A perf that is missing or refused is no error: see
    /// [`Monitor::profile_error`].
    pub fn start(config: Config) -> Result<Monitor, Error> {
        config.check()?;
        let mut notes = Notes::default();
        let mut sources: Vec<Box<dyn Source>> = match &config.node_exporter {
            Some(url) => {
                let remote =
                    crate::node_exporter::NodeExporter::start(url).map_err(Error::Scrape)?;
                notes.add(
                    0.0,
                    "node_exporter",
                    format!(
                        "remote host: not filled from node_exporter: {}",
                        crate::node_exporter::UNFILLED
                    ),
                );
                vec![Box::new(remote)]
            }
            None => vec![
                Box::new(cpu::Cpu::default()),
                Box::new(memory::Memory::default()),
                Box::new(disk::Disk::default()),
                Box::new(net::Net::default()),
                Box::new(snmp::Snmp::default()),
                Box::new(sockstat::Sockstat::default()),
            ],
        };
        if !config.pids.is_empty() {
            let processes = Processes::new(&config.pids, config.children)
                .map_err(|(pid, reason)| Error::Pid { pid, reason })?;
            sources.push(Box::new(processes));
        }
        // Only once the settings are known good: a refused start leaves no directory.
        if let Some(dir) = &config.out {
            prepare_out(dir)?;
        }
        let ports = if config.ports.is_empty() {
            None
        } else {
            let (table, fallback) = TcpTable::open();
            if let Some(why) = fallback {
                notes.add(0.0, "ports", why);
            }
            Some(Ports::new(table, config.ports.clone(), config.tcp_budget))
        };
        let (kernel, kernel_error) = if config.kernel {
            match Kernel::start(&config.ports, &config.pids, config.children) {
                Ok(mut kernel) => {
                    for why in kernel.unattached() {
                        notes.add(0.0, "kernel", format!("hook not attached: {why}"));
                    }
                    if let Some(dir) = &config.out {
                        if let Err(why) = kernel.log_to(&dir.join(crate::kernel::hlog::HLOG)) {
                            notes.add(0.0, "kernel", format!("no kernel.hlog: {why}"));
                        }
                    }
                    (Some(kernel), None)
                }
                Err(why) => (None, Some(format!("no kernel figures: {why}"))),
            }
        } else {
            (None, None)
        };
        let (recording, perf_temporary, profile_error) = if config.profile {
            let (data, temporary) = match &config.out {
                Some(dir) => (dir.join("perf.data"), false),
                None => (
                    std::env::temp_dir()
                        .join(format!("webscope-monitor-{}.perf.data", std::process::id())),
                    true,
                ),
            };
            match Recording::start(&config.perf, config.profile_hz, &data) {
                Ok(r) => (Some(r), temporary.then_some(data), None),
                Err(why) => (None, None, Some(why)),
            }
        } else {
            (None, None, None)
        };
        let now = Instant::now();
        let mut monitor = Monitor {
            csv: config.out.as_deref().map(CsvFiles::new),
            config,
            sources,
            ports,
            kernel,
            kernel_error,
            notes,
            stats: Accumulator::default(),
            cost: CostBook::default(),
            started: now,
            started_unix: unix_now(),
            last: now,
            samples: 0,
            latest: BTreeMap::new(),
            recording,
            perf_temporary,
            profile_error,
            interrupted: false,
        };
        let began = webscope_sys::thread_time();
        monitor.read_sources(0.0, 0.0);
        monitor.cost.add_sample(webscope_sys::thread_time() - began);
        Ok(monitor)
    }

    /// Why `--kernel` gives no kernel figures (not root, no BTF...), in one line.
    pub fn kernel_error(&self) -> Option<&str> {
        self.kernel_error.as_deref()
    }

    /// Why `--profile` gives no profile (perf missing or refused), in one line.
    pub fn profile_error(&self) -> Option<&str> {
        self.profile_error.as_deref()
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Notes written since the last call (to show each once as it happens).
    pub fn take_new_notes(&mut self) -> Vec<Note> {
        self.notes.take_new()
    }

    /// The latest rows of every group (a group not read at the last sample, like the per-port
    /// states between walks, keeps its previous rows).
    pub fn latest(&self) -> impl Iterator<Item = &GroupRows> {
        self.latest.values()
    }

    /// One value of the latest rows: `monitor.latest_value("cpu", "all", "busy_pct")`.
    pub fn latest_value(&self, group: &str, key: &str, column: &str) -> Option<f64> {
        self.latest.get(group)?.value(key, column)
    }

    fn read_sources(&mut self, t: f64, dt: f64) -> Vec<GroupRows> {
        let mut out = Vec::new();
        let mut ctx = Ctx {
            t,
            dt,
            notes: &mut self.notes,
        };
        let all = self
            .sources
            .iter_mut()
            .map(|s| s.as_mut())
            .chain(self.ports.as_mut().map(|p| p as &mut dyn Source))
            .chain(self.kernel.as_mut().map(|k| k as &mut dyn Source));
        for source in all {
            let began = webscope_sys::thread_time();
            if let Err(message) = source.sample(&mut ctx, &mut out) {
                ctx.notes.add(t, source.name(), message);
            }
            self.cost
                .add_source(source.name(), webscope_sys::thread_time() - began);
        }
        out
    }

    /// Reads every source now: rates over the time since the previous sample, and levels.
    /// Rows go to the CSV files (with an output directory) and the summary's statistics.
    pub fn sample(&mut self) -> Result<Sample, Error> {
        let began = webscope_sys::thread_time();
        let now = Instant::now();
        let t = (now - self.started).as_secs_f64();
        let dt = (now - self.last).as_secs_f64();
        self.last = now;
        let groups = self.read_sources(t, dt.max(1e-9));
        let sample = Sample {
            t,
            unix_time: self.started_unix + t,
            dt,
            groups,
        };
        self.samples += 1;
        self.stats.add(&sample);
        if let Some(csv) = &mut self.csv {
            csv.write(&sample)?;
        }
        for g in &sample.groups {
            self.latest.insert(g.group.name, g.clone());
        }
        self.cost.add_sample(webscope_sys::thread_time() - began);
        Ok(sample)
    }

    /// Marks the run as stopped early (by Ctrl-C), for the summary.
    pub fn set_interrupted(&mut self) {
        self.interrupted = true;
    }

    /// Ends the run: stops perf and classifies its samples, writes the summary
    /// (`monitor.json`, and `profile.csv` with a profile) after the CSV files.
    pub fn stop(mut self) -> Result<Results, Error> {
        let wall = self.started.elapsed();
        let mut cost = self.cost.summary(wall);
        let mut profile: Option<Profile> = None;
        if let Some(recording) = self.recording.take() {
            cost.perf_record_cpu_s = recording.cpu_seconds();
            match recording.finish(&self.config.pids) {
                Ok(p) => {
                    if p.unknown_kernel_pct > 50.0 {
                        self.notes.add(
                            wall.as_secs_f64(),
                            "profile",
                            "most kernel functions are unnamed (kernel.kptr_restrict): run as root to see them",
                        );
                    }
                    profile = Some(p);
                }
                Err(why) => self.profile_error = Some(why),
            }
            if let Some(data) = &self.perf_temporary {
                let _ = std::fs::remove_file(data);
            }
        }
        let mut files = Vec::new();
        if let Some(csv) = &mut self.csv {
            csv.flush()?;
        }
        let summary = Summary {
            version: 1,
            started_unix: self.started_unix,
            duration_s: wall.as_secs_f64(),
            interval_s: self.config.interval.as_secs_f64(),
            samples: self.samples,
            interrupted: self.interrupted,
            pids: self.config.pids.clone(),
            ports: self.config.ports.clone(),
            source: match &self.config.node_exporter {
                Some(url) => format!("node_exporter {url}"),
                None => "procfs".into(),
            },
            host: Host::current(),
            groups: self.stats.groups(),
            tcp_walks: self.ports.as_ref().map(Ports::stats),
            profile,
            profile_error: self.profile_error.clone(),
            kernel: self.kernel.as_mut().map(Kernel::summary),
            kernel_error: self.kernel_error.clone(),
            notes: self.notes.all().to_vec(),
            cost,
        };
        if let Some(dir) = &self.config.out {
            if let Some(csv) = &self.csv {
                files.extend(csv.names().into_iter().map(|n| dir.join(n)));
            }
            if let Some(profile) = &summary.profile {
                let path = dir.join("profile.csv");
                webscope_sys::write_file(&path, profile_csv(profile).as_bytes())
                    .map_err(out_error(&path))?;
                files.push(path);
                files.push(dir.join("perf.data"));
            }
            if summary.kernel.is_some() && dir.join(crate::kernel::hlog::HLOG).exists() {
                files.push(dir.join(crate::kernel::hlog::HLOG));
            }
            let path = dir.join("monitor.json");
            write_atomically(&path, &summary)?;
            files.push(path);
        }
        Ok(Results { summary, files })
    }
}

/// `monitor.json` appears whole or not at all: written beside, then renamed.
fn write_atomically(path: &Path, summary: &Summary) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(summary)
        .map_err(|e| out_error(path)(std::io::Error::other(e)))?;
    webscope_sys::write_file(path, (text + "\n").as_bytes()).map_err(out_error(path))
}

fn profile_csv(profile: &Profile) -> String {
    let mut text = format!(
        "{}\n",
        ["category", "symbol"]
            .iter()
            .chain(PROFILE_GROUP.columns)
            .copied()
            .collect::<Vec<_>>()
            .join(",")
    );
    for c in &profile.categories {
        text.push_str(&format!(
            "{},,{},{},{},100\n",
            c.category.name(),
            c.samples,
            number(c.pct),
            c.kernel_pct.map_or_else(String::new, number)
        ));
        for s in &c.top {
            text.push_str(&format!(
                "{},{},{},{},,{}\n",
                c.category.name(),
                crate::csv::cell(&s.symbol),
                s.samples,
                number(s.pct * c.pct / 100.0),
                number(s.pct)
            ));
        }
    }
    text
}

/// Samples every interval until `stop` is raised or the duration is over, calling
/// `on_sample` after each sample; a last sample is taken when stopped early, so nothing
/// measured is lost.
pub fn run(
    config: Config,
    stop: &AtomicBool,
    on_sample: &mut dyn FnMut(&mut Monitor, &Sample),
) -> Result<Results, Error> {
    let mut monitor = Monitor::start(config)?;
    drive(&mut monitor, stop, on_sample)?;
    monitor.stop()
}

/// Samples `monitor` every interval until `stop` is raised or the duration is over, calling
/// `on_sample` after each sample (a last sample is taken when stopped early). For callers
/// that want the [`Monitor`] between start and stop (to show its profile error first, say);
/// [`run`] is start, drive and stop in one.
pub fn drive(
    monitor: &mut Monitor,
    stop: &AtomicBool,
    on_sample: &mut dyn FnMut(&mut Monitor, &Sample),
) -> Result<(), Error> {
    let interval = monitor.config.interval;
    let end = monitor.config.duration.map(|d| monitor.started + d);
    let mut next = monitor.started + interval;
    loop {
        if let Some(end) = end {
            next = next.min(end);
        }
        // Sleep in short steps so that Ctrl-C is answered within 50 ms.
        while Instant::now() < next && !stop.load(Ordering::Relaxed) {
            let left = next.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        if stop.load(Ordering::Relaxed) {
            if end.is_some() {
                monitor.set_interrupted();
            }
            if monitor.last.elapsed() >= Duration::from_millis(10) {
                let sample = monitor.sample()?;
                on_sample(monitor, &sample);
            }
            return Ok(());
        }
        let sample = monitor.sample()?;
        on_sample(monitor, &sample);
        if end.is_some_and(|end| Instant::now() + Duration::from_millis(1) >= end) {
            return Ok(());
        }
        next += interval;
        let now = Instant::now();
        if next < now {
            // Fell behind (a stalled machine): skip the missed ticks rather than burst.
            next = now + interval;
        }
    }
}

/// A monitor sampling on a thread of its own, for programs that do other work meanwhile
/// (the lab runs one beside each load run).
pub struct Running {
    stop: Arc<AtomicBool>,
    latest: Arc<Mutex<Option<Sample>>>,
    handle: JoinHandle<Result<Results, Error>>,
}

/// Starts a monitor on its own thread; errors of the start (bad settings, a PID that does not
/// exist) are returned here.
pub fn spawn(config: Config) -> Result<Running, Error> {
    let mut monitor = Monitor::start(config)?;
    let stop = Arc::new(AtomicBool::new(false));
    let latest = Arc::new(Mutex::new(None));
    let (flag, shared) = (Arc::clone(&stop), Arc::clone(&latest));
    let handle = std::thread::Builder::new()
        .name("webscope-monitor".into())
        .spawn(move || {
            drive(&mut monitor, &flag, &mut |_, sample| {
                if let Ok(mut slot) = shared.lock() {
                    *slot = Some(match slot.take() {
                        Some(last) => merged(last, sample),
                        None => sample.clone(),
                    });
                }
            })?;
            monitor.stop()
        })
        .map_err(Error::Thread)?;
    Ok(Running {
        stop,
        latest,
        handle,
    })
}

/// `sample`, with the rows of any group it lacks (a group read less often than every tick,
/// such as the TCP walk under its budget) taken from `last`.
fn merged(last: Sample, sample: &Sample) -> Sample {
    let mut merged = sample.clone();
    for group in last.groups {
        if !merged
            .groups
            .iter()
            .any(|g| g.group.name == group.group.name)
        {
            merged.groups.push(group);
        }
    }
    merged
}

impl Running {
    /// The latest sample, if one was taken yet; a group that this tick did not read (the
    /// TCP walk runs less often under its budget) keeps its rows from the tick that did.
    pub fn latest(&self) -> Option<Sample> {
        self.latest.lock().ok()?.clone()
    }

    /// Whether the run ended by itself (its duration is over).
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Stops sampling (after a last sample) and returns the results.
    pub fn stop(self) -> Result<Results, Error> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().map_err(|_| Error::Panicked)?
    }
}

#[cfg(test)]
mod tests {
    use super::merged;
    use crate::sources::{cpu::CPU, ports::PORTS};
    use crate::table::{GroupRows, Row, Sample};

    fn sample(t: f64, groups: Vec<GroupRows>) -> Sample {
        Sample {
            t,
            unix_time: t,
            dt: 0.1,
            groups,
        }
    }

    fn rows(group: &'static crate::table::Group, value: f64) -> GroupRows {
        GroupRows {
            group,
            rows: vec![Row::new(["x"], vec![value])],
        }
    }

    #[test]
    fn a_group_missing_from_a_tick_keeps_its_last_rows_and_a_present_one_is_replaced() {
        let first = sample(0.1, vec![rows(&CPU, 1.0), rows(&PORTS, 7.0)]);
        let second = sample(0.2, vec![rows(&CPU, 2.0)]);
        let both = merged(first, &second);
        assert_eq!(both.t, 0.2);
        assert_eq!(both.group("cpu").unwrap().rows[0].values, [2.0]);
        assert_eq!(both.group("ports").unwrap().rows[0].values, [7.0]);
        // A group present but empty (a port with no socket yet) is the new truth.
        let third = sample(
            0.3,
            vec![GroupRows {
                group: &PORTS,
                rows: vec![],
            }],
        );
        let next = merged(both, &third);
        assert!(next.group("ports").unwrap().rows.is_empty());
        assert_eq!(next.group("cpu").unwrap().rows[0].values, [2.0]);
    }
}
