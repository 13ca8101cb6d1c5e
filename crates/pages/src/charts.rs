//! Charts several experiments draw from their runs' files: the TCP states of the server's
//! port over a run (the monitor's `ports.csv`), the CPU breakdown per run (stacked bars), the
//! kernel profile per run (the monitor's perf profile, Yates et al. Figure 3) and the
//! latency histograms read back from each run's HdrHistogram log.

use std::path::Path;
use webscope_report::human::pct_brief;

use webscope_monitor::profile::{Category, Profile};
use webscope_monitor::tcp::TcpState;
use webscope_report::svg::{Axis, BarChart, Series, Style, XyChart};
use webscope_report::Block;

use super::point::{goodput_spread, Point};
use webscope_bottleneck::os_figures::{server_host, server_machine};

/// The TCP states drawn, as `ports.csv` names them: the monitor's connection states but the
/// instant `close`.
fn states() -> impl Iterator<Item = &'static str> {
    TcpState::CONNECTION
        .into_iter()
        .filter(|s| *s != TcpState::Close)
        .map(TcpState::name)
}

/// The server port's TCP states over one run, from `run_dir/monitor/ports.csv`.
pub fn tcp_states(run_dir: &Path, what: &str) -> Block {
    let path = run_dir.join("monitor").join("ports.csv");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Block::Warning(format!(
            "No TCP-state samples for {what} (the monitor wrote no {}).",
            path.display()
        ));
    };
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let (Some(t), Some(side)) = (col("time_s"), col("side")) else {
        return Block::Warning(format!("{} has no time_s or side column.", path.display()));
    };
    let mut series: Vec<Series> = states().map(|s| Series::line(s, Vec::new())).collect();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f.get(side) != Some(&"local") {
            continue;
        }
        let Some(time) = f.get(t).and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        for (s, name) in series.iter_mut().zip(states()) {
            if let Some(v) = col(name).and_then(|c| f.get(c)?.parse::<f64>().ok()) {
                s.points.push((time, v));
            }
        }
    }
    let peak = |s: &Series| s.points.iter().map(|p| p.1).fold(0.0, f64::max);
    series.retain(|s| peak(s) > 0.0);
    let reading = match series.iter().max_by(|a, b| peak(a).total_cmp(&peak(b))) {
        Some(top) => {
            let max = peak(top);
            let at = top
                .points
                .iter()
                .find(|p| p.1 >= 0.9 * max)
                .map_or(0.0, |p| p.0);
            format!(
                "{} dominates on the server's side of the port: {max:.0} sockets at most, 90 % of that after {at:.1} s{}.",
                top.name,
                if top.name == "time_wait" {
                    " — every closed connection lingers there for 60 s, so the table fills with the connection rate"
                } else {
                    ""
                }
            )
        }
        None => "No socket on the server's side of its port during the run.".into(),
    };
    // Per-port counts walk the kernel's whole socket table, so the monitor spaces them out;
    // the host's TIME_WAIT total (sockstat) is cheap and read at every sample: drawn beside
    // them, it shows the filling between two walks. It counts every port and what earlier
    // runs left, so the reading says so rather than quote it as the run's.
    let mut reading = reading;
    if let Some(host) = host_time_wait(&run_dir.join("monitor").join("sockets.csv")) {
        let most = host.iter().map(|p| p.1).fold(0.0, f64::max);
        reading.push_str(&format!(
            " The dashed line is the host's whole TIME_WAIT table ({most:.0} at most): every port and both ends, what earlier runs left included; the table's TIME_WAIT column counts only this run's own."
        ));
        series.push(Series {
            name: "host time_wait".into(),
            points: host,
            style: Style::Dashed,
            spread: Vec::new(),
        });
    }
    Block::Chart {
        svg: XyChart {
            title: format!("TCP states of the server's port over time ({what})"),
            x: Axis::linear("time (s)"),
            y: Axis::linear("sockets"),
            series,
        }
        .to_svg(),
        reading,
    }
}

/// The host's TIME_WAIT count over time, from the monitor's sockets.csv.
fn host_time_wait(path: &Path) -> Option<Vec<(f64, f64)>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next()?.split(',').collect();
    let t = header.iter().position(|h| *h == "time_s")?;
    let tw = header.iter().position(|h| *h == "tcp_tw")?;
    let points: Vec<(f64, f64)> = lines
        .filter_map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            Some((f.get(t)?.parse().ok()?, f.get(tw)?.parse().ok()?))
        })
        .collect();
    (!points.is_empty()).then_some(points)
}

/// The sentence under a chart of the server's phases (parse, process, log in µs per request,
/// in order of growing files): `claim` where the figures bear it out (processing grows from
/// the first bar to the last, parsing and logging by less than half), else what they show.
pub fn phases_reading(bars: &[(String, (f64, f64, f64))], claim: &str) -> String {
    let (Some((first, a)), Some((last, b))) = (bars.first(), bars.last()) else {
        return "No phase was measured.".into();
    };
    let flat = |x: f64, y: f64| y <= 1.5 * x.max(0.1);
    if bars.len() > 1 && b.1 > a.1 && flat(a.0, b.0) && flat(a.2, b.2) {
        return claim.into();
    }
    format!(
        "The server's phases from {first} to {last}: parsing {:.1} → {:.1} µs, processing {:.1} → {:.1} µs, logging {:.1} → {:.1} µs per request.",
        a.0, b.0, a.1, b.1, a.2, b.2
    )
}

/// Stacked CPU breakdown (all CPUs, mean over each run), one bar per run.
pub fn cpu_stack(points: &[Point], labels: &[String], what: &str) -> Option<Block> {
    let columns = [
        ("user", "user_pct"),
        ("system", "system_pct"),
        ("softirq", "softirq_pct"),
        ("irq", "irq_pct"),
        ("iowait", "iowait_pct"),
        ("idle", "idle_pct"),
    ];
    let mut series: Vec<(String, Vec<f64>)> = Vec::new();
    for (name, column) in columns {
        let values: Option<Vec<f64>> = points
            .iter()
            .map(|p| server_machine(&p.run)?.mean("cpu", "all", column))
            .collect();
        series.push((name.to_string(), values?));
    }
    let busiest = points
        .iter()
        .zip(labels)
        .filter_map(|(p, l)| Some((l, p.cpu_pct?)))
        .max_by(|a, b| (a.1 .1 + a.1 .2).total_cmp(&(b.1 .1 + b.1 .2)))?;
    let source = points
        .iter()
        .find_map(|p| server_host(&p.run).map(|os| os.source.clone()))
        .map_or(String::new(), |s| {
            format!(" (the server's machine, through {s})")
        });
    Some(Block::Chart {
        svg: BarChart {
            title: format!("Where the CPUs' time went, per {what}{source}"),
            categories: labels.to_vec(),
            y: Axis::linear("% of all CPUs"),
            series,
            stacked: true,
        }
        .to_svg(),
        reading: format!(
            "The kernel's share (system + softirq) is largest at {}: {} of all CPUs against {} in user space{}.",
            busiest.0,
            pct_brief((busiest.1 .1 + busiest.1 .2) / 100.0),
            pct_brief(busiest.1 .0 / 100.0),
            // Said only where the figures say it.
            if busiest.1 .1 + busiest.1 .2 > busiest.1 .0 {
                " — serving files is mostly kernel work"
            } else {
                ""
            }
        ),
    })
}

/// The kernel profile per run: each kernel category's share of kernel samples, stacked.
/// `None` when no run has a profile; the reason perf gave when it was asked and refused.
pub fn kernel_profile(points: &[Point], labels: &[String], what: &str) -> Option<Block> {
    let profiles: Vec<Option<&Profile>> = points
        .iter()
        .map(|p| p.run.local_os()?.profile.as_ref())
        .collect();
    if profiles.iter().all(Option::is_none) {
        let why = points
            .iter()
            .find_map(|p| p.run.local_os()?.profile_error.as_deref())?;
        return Some(Block::Text(format!("No kernel profile: {why}.")));
    }
    let share = |profile: Option<&Profile>, category: Category| -> f64 {
        profile
            .and_then(|p| p.share(category)?.kernel_pct)
            .unwrap_or(0.0)
    };
    let series: Vec<(String, Vec<f64>)> = Category::ALL
        .into_iter()
        .filter(|c| c.is_kernel())
        .map(|c| {
            (
                c.name().to_string(),
                profiles.iter().map(|p| share(*p, c)).collect(),
            )
        })
        .collect();
    let (top, mean) = series
        .iter()
        .map(|(name, v)| (name.clone(), v.iter().sum::<f64>() / v.len().max(1) as f64))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(Block::Chart {
        svg: BarChart {
            title: format!("Kernel time by category, per {what} (perf)"),
            categories: labels.to_vec(),
            y: Axis::linear("% of kernel samples"),
            series,
            stacked: true,
        }
        .to_svg(),
        reading: format!(
            "{top} takes the most kernel time, {} of kernel samples on average (Yates et al. found the network's high layers and the driver routines on top in 1997).",
            pct_brief(mean / 100.0)
        ),
    })
}

/// Histogram bins: 8 per decade from 10 µs to 10 s, in nanoseconds.
pub fn edges_ns() -> Vec<u64> {
    (0..=48)
        .map(|i| (1e4 * 10f64.powf(f64::from(i) / 8.0)).round() as u64)
        .collect()
}

/// A histogram as (bin centre in ms, share of requests in %), empty bins left out.
pub fn shares(counts: &[u64], edges: &[u64]) -> Vec<(f64, f64)> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return Vec::new();
    }
    counts
        .iter()
        .zip(edges.windows(2))
        .filter(|(c, _)| **c > 0)
        .map(|(c, w)| {
            let centre_ms = (w[0] as f64 * w[1] as f64).sqrt() / 1e6;
            (centre_ms, 100.0 * *c as f64 / total as f64)
        })
        .collect()
}

/// Each run's response-time histogram, overlaid, in linear and in log frequency.
pub fn histograms(dir: &Path, runs: &[(String, String)], what: &str) -> Vec<Block> {
    let runs: Vec<(std::path::PathBuf, String)> = runs
        .iter()
        .map(|(name, label)| (dir.join(name), label.clone()))
        .collect();
    overlaid_histograms(&runs, what)
}

/// The response-time histograms of runs anywhere (their directories given whole), overlaid in
/// linear and log frequency.
pub fn overlaid_histograms(runs: &[(std::path::PathBuf, String)], what: &str) -> Vec<Block> {
    let edges = edges_ns();
    let mut series = Vec::new();
    for (run_dir, label) in runs {
        let name = run_dir.display();
        let hlog = run_dir.join("load.hlog");
        match webscope_load::read_bins(&hlog, None, &edges) {
            Ok(counts) => series.push(Series::line(label.clone(), shares(&counts, &edges))),
            Err(e) => return vec![Block::Warning(format!("No histogram for {name}: {e}"))],
        }
    }
    let modes: Vec<String> = series
        .iter()
        .filter_map(|s| {
            let top = s.points.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
            Some(format!("{:.2} ms", top.0))
        })
        .collect();
    let chart = |title: String, y: Axis| XyChart {
        title,
        x: Axis::log("response time (ms)"),
        y,
        series: series.clone(),
    };
    vec![
        Block::Chart {
            svg: chart(format!("Response-time histograms, {what}"), Axis::linear("% of requests")).to_svg(),
            reading: format!(
                "The most frequent response time moves {} as the load grows.",
                modes.join(" → ")
            ),
        },
        Block::Chart {
            svg: chart(
                format!("Response-time histograms, {what}, log frequency"),
                Axis::log("% of requests (log)"),
            )
            .to_svg(),
            reading: "Log frequency, as Chiarini and Couch drew them: the tail's shape, invisible on a linear scale, shows how far from an ideal server each load is.".into(),
        },
    ]
}

/// Goodput against x, with the repeats' spread as error bars: the sweeps' measured line.
pub fn goodput_series(points: &[Point]) -> Series {
    let mut s = Series::line(
        repeats_label(points),
        points.iter().map(|p| (p.x, p.rps)).collect(),
    );
    s.spread = goodput_spread(points);
    s
}

/// The measured series' legend: "measured", or "median of N" with `--repeat`.
fn repeats_label(points: &[Point]) -> String {
    match points.iter().map(|p| p.repeats).max() {
        Some(n) if n > 1 => format!("median of {n} (bars: min-max)"),
        _ => "measured".into(),
    }
}

/// The server's CPU time per request, one bar per category (0 where it was not measured).
pub fn cpu_bars(title: &str, categories: &[String], cpu_us: &[Option<f64>]) -> String {
    let values = cpu_us.iter().map(|c| c.unwrap_or(0.0)).collect();
    bars(
        title,
        categories,
        "CPU µs per request",
        "server CPU",
        values,
    )
}

/// One series of bars, one bar per category (a protocol, a step): what each measured.
pub fn bars(title: &str, categories: &[String], y: &str, series: &str, values: Vec<f64>) -> String {
    BarChart {
        title: title.into(),
        categories: categories.to_vec(),
        y: Axis::linear(y),
        series: vec![(series.into(), values)],
        stacked: false,
    }
    .to_svg()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_log_spaced_and_shares_sum_to_a_hundred() {
        let e = edges_ns();
        assert_eq!((e[0], e[8], e[48]), (10_000, 100_000, 10_000_000_000));
        let counts: Vec<u64> = (0..48)
            .map(|i| if i == 8 || i == 9 { 5 } else { 0 })
            .collect();
        let s = shares(&counts, &e);
        assert_eq!(s.len(), 2);
        assert!((s.iter().map(|p| p.1).sum::<f64>() - 100.0).abs() < 1e-9);
        // Bin 8 is [100 µs, 133 µs): its centre is about 0.115 ms.
        assert!((s[0].0 - 0.1155).abs() < 0.001, "{s:?}");
    }

    /// The phases' sentence is the claim only where the figures bear it out (#27).
    #[test]
    fn the_phases_sentence_follows_the_figures() {
        let bars = |v: &[(f64, f64, f64)]| -> Vec<(String, (f64, f64, f64))> {
            v.iter()
                .enumerate()
                .map(|(i, p)| (format!("c{i}"), *p))
                .collect()
        };
        let grows = bars(&[(5.0, 28.0, 2.7), (4.8, 93.0, 2.0)]);
        assert_eq!(phases_reading(&grows, "claim"), "claim");
        let parse_grows = bars(&[(5.0, 28.0, 2.7), (40.0, 93.0, 2.0)]);
        let said = phases_reading(&parse_grows, "claim");
        assert!(said.contains("parsing 5.0 → 40.0 µs"), "{said}");
        assert_eq!(phases_reading(&[], "claim"), "No phase was measured.");
    }

    #[test]
    fn tcp_states_are_read_from_the_local_side() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("monitor")).unwrap();
        std::fs::write(
            tmp.path().join("monitor/ports.csv"),
            "time_s,unix_time,port,side,established,time_wait\n\
             0.1,0,80,local,3,100\n0.1,0,80,remote,50,0\n0.2,0,80,local,4,1000\n",
        )
        .unwrap();
        // The host's table holds 28 228 sockets, most of them an earlier lab's (#27).
        std::fs::write(
            tmp.path().join("monitor/sockets.csv"),
            "time_s,unix_time,tcp_tw\n0.1,0,28228\n0.2,0,27000\n",
        )
        .unwrap();
        let Block::Chart { svg, reading } = tcp_states(tmp.path(), "a run") else {
            panic!("no chart");
        };
        assert!(
            reading
                .starts_with("time_wait dominates on the server's side of the port: 1000 sockets"),
            "{reading}"
        );
        assert!(
            reading.contains("host's whole TIME_WAIT table (28228 at most)")
                && reading.contains("what earlier runs left included"),
            "{reading}"
        );
        assert!(svg.contains("established") && !svg.contains("close_wait"));
        assert!(matches!(
            tcp_states(&tmp.path().join("none"), "x"),
            Block::Warning(_)
        ));
    }
}
