//! Each experiment's "the paper found" panel: its own figures set beside the paper's, both
//! normalised alike (ratios, shares, bends), with one sentence on where they agree, where they
//! differ, and why. The papers' numbers come from `pages/src/papers/*.toml` only.

use super::point::Point;
use super::sweep::Saturation;
use crate::papers::{find, Comparison};
use webscope_report::human::pct_brief;

/// A figure given in per cent, as the panels' sentences say it.
fn pct(percent: f64) -> String {
    webscope_report::human::pct_brief(percent / 100.0)
}

/// Why ours keeps what it keeps past the knee, from the largest load's verdict (the one
/// place the page's causes come from), not from a story about loopback.
fn past_the_knee(ours: f64, paper: f64, last: Option<&Point>) -> String {
    let why = last.map_or(String::new(), |l| {
        format!(
            " At {} clients what bounds ours is {}: {}.",
            l.x,
            l.verdict.bound.label(),
            l.verdict.reading
        )
    });
    let how = if (ours - paper).abs() <= 0.1 {
        "the same gentle decline."
    } else if ours > paper {
        "ours holds up better."
    } else {
        "ours declines faster."
    };
    format!("{how}{why}")
}

/// Yates et al., Figure 1: the clients at which throughput saturates, and how much of it is
/// kept at twelve times that load.
pub fn clients(points: &[Point], sat: Option<&Saturation>) -> Vec<Comparison> {
    let mut out = Vec::new();
    let valid: Vec<&Point> = points.iter().filter(|p| p.valid()).collect();
    if let (Some(published), Some(sat)) = (find("clients", "saturation_clients"), sat) {
        let paper = published.points[0].1;
        let at = valid.iter().find(|p| p.x == sat.knee);
        let why = at.map_or(String::new(), |p| {
            format!(" (what bounds ours: {})", p.verdict.bound.label())
        });
        // "keep one server busy" only where the knee's verdict is the server.
        let server_bound =
            at.is_some_and(|p| p.verdict.bound == webscope_bottleneck::Bound::ServerCpu);
        // A sweep that still grows at its largest load has no saturation point to set beside
        // the paper's, whatever bounds it there (#52: "saturates at 20" beside "still grows at
        // 20" on one page).
        let unsaturated = sat.shape == super::sweep::Shape::Grows;
        let latency_bound =
            at.is_some_and(|p| p.verdict.bound == webscope_bottleneck::Bound::Latency);
        let reading = if unsaturated && latency_bound {
            format!(
                "The paper saturates at {paper:.0} clients; ours still grows at {} clients, the largest load measured, where no resource is at its limit (its verdict: latency): more clients are needed to find our saturation point.",
                sat.knee
            )
        } else if unsaturated {
            format!(
                "The paper saturates at {paper:.0} clients; ours still grows at {} clients, the largest load measured{why}: no saturation point to set beside the paper's.",
                sat.knee
            )
        } else if sat.knee <= 2.0 * paper {
            format!(
                "Both saturate within a handful of closed-loop clients without think time: the paper at {paper:.0}, ours at {}{why}. With no think time, a few clients {} whatever the decade; the paper's bound was a 75 MHz CPU on 10 Mbit/s Ethernet.",
                sat.knee,
                if server_bound {
                    "keep one server busy"
                } else {
                    "are enough to reach the peak"
                }
            )
        } else {
            format!(
                "Ours saturates later than the paper's {paper:.0} clients, at {}{why}: more of each round trip is the clients' own kernel work here, so more clients are needed to keep the server busy.",
                sat.knee
            )
        };
        out.push(Comparison::new(
            "clients at which throughput saturates",
            &published,
            vec![("clients at saturation".into(), paper)],
            vec![(!unsaturated).then_some(sat.knee)],
            reading,
        ));
    }
    if let Some(published) = find("clients", "sustained_share") {
        let (five, sixty) = (published.points[0].1, published.points[1].1);
        let knee = sat.and_then(|s| valid.iter().find(|p| p.x == s.knee));
        let last = valid.last();
        let ours = match (knee, last) {
            (Some(k), Some(l)) if k.mbit_s > 0.0 && l.x > k.x => Some(l.mbit_s / k.mbit_s),
            _ => None,
        };
        let reading = match ours {
            Some(o) => format!(
                "Past saturation the paper kept {} of its byte throughput from 5 to 60 clients; ours keeps {} from the knee to the largest load ({} clients): {}",
                pct(100.0 * sixty / five),
                pct(100.0 * o),
                last.map_or(0.0, |l| l.x),
                past_the_knee(o, sixty / five, last.copied())
            ),
            None => "No load past the knee was measured, so the decline after saturation cannot be compared.".into(),
        };
        out.push(Comparison::new(
            "byte throughput past saturation, relative to the saturation point",
            &published,
            vec![
                ("at saturation (paper: 5 clients)".into(), 1.0),
                ("largest load (paper: 60 clients)".into(), sixty / five),
            ],
            vec![ours.map(|_| 1.0), ours],
            reading,
        ));
    }
    out
}

/// Why our TIME_WAIT falls as it does from A/4 to A*4, from the runs' verdicts: the port
/// range's plateau only where the A/4 run is bound by the ports, else the connection rate.
fn falls_less(ours: f64, paper: f64, small: Option<&Point>, large: Option<&Point>) -> String {
    let ports_bound = small.is_some_and(|p| p.verdict.bound == webscope_bottleneck::Bound::Ports);
    match (small, large) {
        _ if ours <= paper + 0.2 => "Both fall with the connection rate: every closed connection lingers 60 s, so TIME_WAIT follows connections per second, which larger files lower.".into(),
        _ if ports_bound => "Ours falls less: at A/4 the port's TIME_WAIT fills the ephemeral range (that run's verdict), so the count is set by the ports, not by the connection rate the paper's 10 Mbit/s wire set.".into(),
        (Some(a), Some(b)) if a.rps > 0.0 => format!(
            "Ours falls less: our connection rate falls less with file size ({} of A/4's at A*4): what bounds ours is {}, not a 10 Mbit/s wire as in the paper.",
            pct_brief(b.rps / a.rps),
            b.verdict.bound.label()
        ),
        _ => "Ours falls less than the paper's.".into(),
    }
}

/// Yates et al., Tables 2-3 and Figure 2: TIME_WAIT and connection throughput against the
/// WebStone workload's file size.
pub fn filesize(points: &[Point], workload: &dyn Fn(&Point) -> String) -> Vec<Comparison> {
    let mut out = Vec::new();
    // Our runs say "A x0.25"; the paper's tables "A/4".
    let paper_name = |ours: &str| match ours {
        "A x0.25" => "A/4".to_string(),
        "A x0.5" => "A/2".to_string(),
        "A x1" => "A".to_string(),
        "A x2" => "A*2".to_string(),
        "A x4" => "A*4".to_string(),
        other => other.to_string(),
    };
    let ours_at = |label: &str| points.iter().find(|p| paper_name(&workload(p)) == label);
    if let Some(published) = find("filesize", "time_wait") {
        let base = published.points[0].1;
        let first_tw = ours_at("A/4")
            .and_then(|p| p.time_wait)
            .filter(|v| *v > 0.0);
        let paper: Vec<(String, f64)> = published
            .points
            .iter()
            .map(|(l, v)| (l.clone(), v / base))
            .collect();
        let ours: Vec<Option<f64>> = published
            .points
            .iter()
            .map(|(l, _)| Some(ours_at(l)?.time_wait? / first_tw?))
            .collect();
        let paper_last = paper.last().map_or(0.0, |p| p.1);
        let ours_last = ours.last().copied().flatten();
        let reading = match ours_last {
            Some(o) => format!(
                "TIME_WAIT at A*4 relative to A/4: the paper {paper_last:.2}, ours {o:.2}. {}",
                falls_less(o, paper_last, ours_at("A/4"), ours_at("A*4"))
            ),
            None => "Our A/4 and A*4 runs have no TIME_WAIT count to compare.".into(),
        };
        out.push(Comparison::new(
            "sockets in TIME_WAIT, relative to A/4",
            &published,
            paper,
            ours,
            reading,
        ));
    }
    if let Some(published) = find("filesize", "connection_drop") {
        let paper = published.points[0].1;
        let ours = match (ours_at("A/4"), ours_at("A*4")) {
            (Some(a), Some(b)) if b.rps > 0.0 => Some(a.rps / b.rps),
            _ => None,
        };
        let reading = match ours {
            Some(o) => format!(
                "Sixteen times the bytes cost the paper only a factor {paper:.1} in connections per second, and us {o:.1}: {}",
                if o < 16.0 / 2.0 {
                    "in both, the fixed cost per connection (accept, TIME_WAIT, logging), not the bytes, sets the rate of small transfers."
                } else {
                    "ours is nearer the bytes' factor of 16: sendfile makes our fixed cost per connection small, so the bytes dominate."
                }
            ),
            None => "Our runs lack A/4 or A*4.".into(),
        };
        out.push(Comparison::new(
            "connection throughput, A/4 over A*4",
            &published,
            vec![("A/4 over A*4".into(), paper)],
            vec![ours],
            reading,
        ));
    }
    out
}

/// Hu et al., Figure 10: each technique's step of the cumulative throughput gain, as a share
/// of the six steps' sum, and the total.
pub fn techniques(steps: &[(String, f64)]) -> Vec<Comparison> {
    let mut out = Vec::new();
    let Some(published) = find("techniques", "step_gain") else {
        return out;
    };
    // Our gain of each step: throughput after it over throughput before it.
    let gain = |name: &str| -> Option<f64> {
        let i = steps.iter().position(|(l, _)| l == &format!("+{name}"))?;
        let before = steps.get(i.checked_sub(1)?)?.1;
        (before > 0.0).then(|| 100.0 * (steps[i].1 / before - 1.0))
    };
    let paper_sum: f64 = published.points.iter().map(|p| p.1).sum();
    let ours_gains: Vec<Option<f64>> = published.points.iter().map(|(l, _)| gain(l)).collect();
    let ours_sum: f64 = ours_gains.iter().flatten().sum();
    let paper: Vec<(String, f64)> = published
        .points
        .iter()
        .map(|(l, v)| (l.clone(), 100.0 * v / paper_sum))
        .collect();
    let ours: Vec<Option<f64>> = ours_gains
        .iter()
        .map(|g| {
            g.filter(|_| ours_sum.abs() > 0.0)
                .map(|g| 100.0 * g / ours_sum)
        })
        .collect();
    let top = |series: &[(String, Option<f64>)]| {
        series
            .iter()
            .filter_map(|(l, v)| Some((l.clone(), (*v)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    let paper_top = top(&paper
        .iter()
        .map(|(l, v)| (l.clone(), Some(*v)))
        .collect::<Vec<_>>());
    let ours_top = top(&published
        .points
        .iter()
        .map(|(l, _)| l.clone())
        .zip(ours.iter().copied())
        .collect::<Vec<_>>());
    let reading = match (paper_top, ours_top) {
        (Some(p), Some(o)) if p.0 == o.0 => format!(
            "The largest step is the same in both: {} ({} of the six steps' gain in the paper, {} here): a blocking reverse lookup per request costs more than everything else the server does for a small file.",
            p.0,
            pct_brief(p.1 / 100.0),
            pct_brief(o.1 / 100.0)
        ),
        (Some(p), Some(o)) => format!(
            "The paper's largest step is {} ({} of the six steps' gain); ours is {} ({}). {}",
            p.0,
            pct_brief(p.1 / 100.0),
            o.0,
            pct_brief(o.1 / 100.0),
            "Today's kernels make stat and open cheap and the page cache is hot, so the caches that saved system calls in 1999 save less; the steps that remove a blocking lookup or a copy still pay."
        ),
        _ => "Our techniques runs have no gains to compare.".into(),
    };
    out.push(Comparison::new(
        "each technique's share of the cumulative gain (% of the six steps' sum)",
        &published,
        paper,
        ours,
        reading,
    ));
    if let Some(total) = find("techniques", "total_gain") {
        let paper = total.points[0].1;
        let first = steps.first().map(|s| s.1);
        let after_six = steps.iter().find(|(l, _)| l == "+uri-cache").map(|s| s.1);
        let ours = match (first, after_six) {
            (Some(a), Some(b)) if a > 0.0 => Some(100.0 * (b / a - 1.0)),
            _ => None,
        };
        let reading = match ours {
            Some(o) => format!(
                "The six techniques together: +{paper:.0} % throughput in the paper, {o:+.0} % here, where host-name logging's blocking lookup makes the baseline much slower than Apache's was.",
            ),
            None => "Our runs do not reach the sixth step.".into(),
        };
        out.push(Comparison::new(
            "throughput gain of the six techniques together (%)",
            &total,
            vec![("all six".into(), paper)],
            vec![ours],
            reading,
        ));
    }
    out
}

/// Chiarini & Couch, Figure 3: where the mean response time stops doubling as the load
/// doubles, and how fast it grows until then.
pub fn saturation(steps: &[(usize, f64)], stopped_at: Option<usize>) -> Vec<Comparison> {
    let mut out = Vec::new();
    if let Some(published) = find("saturation", "saturation_load") {
        let paper = published.points[0].1;
        out.push(Comparison::new(
            "load at which the mean response time stops doubling",
            &published,
            vec![("threads / clients at saturation".into(), paper)],
            vec![stopped_at.map(|s| s as f64)],
            match stopped_at {
                Some(s) => format!("The paper's doubling stopped beyond {paper:.0} JMeter threads on a 137 KB file; ours at {s} clients. The point moves with the hardware and the file; the shape (doubling, then a constant factor) is what carries over."),
                None => format!("The paper's doubling stopped beyond {paper:.0} threads; ours never stopped doubling up to the cap, so the sweep ended on the cap, not on the rule."),
            },
        ));
    }
    if let Some(published) = find("saturation", "growth_per_doubling") {
        let paper = published.points[0].1;
        let ratios: Vec<f64> = steps
            .windows(2)
            .filter(|w| w[0].1 > 0.0 && stopped_at.is_none_or(|s| w[1].0 < s))
            .map(|w| w[1].1 / w[0].1)
            .collect();
        let doubling: Vec<f64> = ratios
            .iter()
            .copied()
            .filter(|r| *r >= webscope_lab::saturation::DOUBLING)
            .collect();
        let ours = (!doubling.is_empty())
            .then(|| (doubling.iter().map(|r| r.ln()).sum::<f64>() / doubling.len() as f64).exp());
        out.push(Comparison::new(
            "mean response time per doubling of the load, while saturated",
            &published,
            vec![("× per doubling".into(), paper)],
            vec![ours],
            match ours {
                Some(o) => format!("Saturated, a closed loop's response time grows with its population (Little's law, N = X R at flat X): the paper saw it double with each doubling, ours grows ×{o:.2} per doubling (geometric mean of the doubling steps)."),
                None => "Our mean response time never doubled with the load, so there is no saturated growth to compare.".into(),
            },
        ));
    }
    out
}

/// Mughal §3: the CPU's demand against the disk's, and what MVA predicts for 2 and 4 CPUs.
pub fn model(cpu_s: f64, disk_s: f64, x_by_cpus: &[(u32, f64)]) -> Vec<Comparison> {
    let mut out = Vec::new();
    if let (Some(cpu), Some(disk)) = (find("model", "demand_cpu"), find("model", "demand_disk")) {
        let paper = cpu.points[0].1 / disk.points[0].1;
        let ours = (disk_s > 0.0).then(|| cpu_s / disk_s);
        out.push(Comparison::new(
            "CPU demand over disk demand (D = U / X)",
            &cpu,
            vec![("CPU / disk".into(), paper)],
            vec![ours],
            match ours {
                Some(o) => format!("The CPU is the bottleneck in both: its demand is {paper:.0} times the disk's in the paper (large downloads from an SSD), {o:.0} times here (a file set that fits in the page cache)."),
                None => format!("The paper's CPU demand is {paper:.0} times its disk's; our disk had no measurable demand (the set is in the page cache), so the CPU is the only station that counts."),
            },
        ));
    }
    if let Some(published) = find("model", "mva_throughput") {
        let base = published.points[0].1;
        let paper: Vec<(String, f64)> = published
            .points
            .iter()
            .map(|(l, v)| (l.clone(), v / base))
            .collect();
        let ours_base = x_by_cpus
            .iter()
            .find(|c| c.0 == 1)
            .map(|c| c.1)
            .filter(|v| *v > 0.0);
        let ours: Vec<Option<f64>> = [1u32, 2, 4]
            .iter()
            .map(|n| Some(x_by_cpus.iter().find(|c| c.0 == *n)?.1 / ours_base?))
            .collect();
        let four = ours.get(2).copied().flatten();
        out.push(Comparison::new(
            "MVA's predicted throughput for 1, 2 and 4 CPUs, relative to 1 CPU",
            &published,
            paper,
            ours,
            match four {
                Some(f) => format!(
                    "The paper's model scales with the CPUs (×{:.2} at 4) because the CPU is the only loaded station; ours predicts ×{f:.2}: {}",
                    published.points[2].1 / base,
                    if f < 2.0 {
                        "the load generator's core binds before a second server CPU would help, so the model says more server CPUs buy nothing here."
                    } else {
                        "the server's CPU is the bottleneck here too."
                    }
                ),
                None => "Our model has no MVA curves to compare.".into(),
            },
        ));
    }
    out
}

/// Hibino et al., Figure 2: how much of the light service's throughput is lost at 40 heavy
/// clients: under the OS's own scheduling (our `threads`) and under the best scheme they saw
/// (Solaris) or the middleware's (our `fair`).
pub fn degradation(lost_pct: &[(String, f64)]) -> Vec<Comparison> {
    let Some(published) = find("degradation", "light_lost") else {
        return Vec::new();
    };
    let ours = |policy: &str| lost_pct.iter().find(|(p, _)| p == policy).map(|p| p.1);
    let (solaris, least, most) = (
        published.points[0].1,
        published.points[1].1,
        published.points[2].1,
    );
    let threads = ours("threads");
    let fair = ours("fair");
    let reading = format!(
        "Under the OS's own scheduling the paper's Linux, FreeBSD and Windows lost {least:.0}-{most:.0} % of the light service at 40 heavy clients and Solaris {solaris:.0} %; Linux 6's CFS under our thread pool loses {}, and the middleware's fair scheduler {} — the OS-independent control the paper called for.",
        threads.map_or("-".into(), |t| pct_brief(t / 100.0)),
        fair.map_or("-".into(), |f| pct_brief(f / 100.0))
    );
    vec![Comparison::new(
        "light service's throughput lost at 40 heavy clients (%)",
        &published,
        vec![
            (
                "OS scheduling (paper: Linux/FreeBSD/Windows, least; ours: threads)".into(),
                least,
            ),
            (
                "the gentlest scheme (paper: Solaris; ours: fair)".into(),
                solaris,
            ),
        ],
        vec![threads, fair],
        reading,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #52: a sweep that still grows at its largest load, bound by the machine's CPUs there,
    /// is not said to saturate at that load (the sweep's own sentence says it still grows).
    #[test]
    fn a_sweep_that_still_grows_is_not_said_to_saturate() {
        let mut pts = super::super::point::test_sweep(
            &[(1.0, 1000.0), (5.0, 3000.0), (20.0, 9000.0)],
            0.3,
            Some(0.5),
        );
        for p in &mut pts {
            p.verdict.bound = webscope_bottleneck::Bound::MachineCpu;
        }
        let sat = super::super::sweep::saturation(&pts).unwrap();
        assert_eq!(sat.shape, super::super::sweep::Shape::Grows);
        let c = clients(&pts, Some(&sat));
        let reading = &c[0].reading;
        assert!(
            reading.contains("ours still grows at 20 clients, the largest load measured")
                && !reading.contains("saturates later"),
            "{reading}"
        );
        assert_eq!(c[0].ours[0], None);
    }

    #[test]
    fn each_experiments_panel_draws_the_papers_numbers() {
        let c = techniques(&[
            ("baseline".into(), 1000.0),
            ("+dns-cache".into(), 2000.0),
            ("+string-cache".into(), 2040.0),
            ("+mmap".into(), 2000.0),
            ("+stat-cache".into(), 2100.0),
            ("+file-cache".into(), 2200.0),
            ("+uri-cache".into(), 2250.0),
        ]);
        assert_eq!(c.len(), 2);
        let dns = &c[0];
        assert_eq!(dns.paper[0].0, "dns-cache");
        assert!((dns.paper[0].1 - 100.0 * 14.0 / 51.0).abs() < 1e-9);
        assert!(dns.ours[0].unwrap() > 50.0, "{:?}", dns.ours);
        assert!(
            dns.reading
                .starts_with("The largest step is the same in both: dns-cache"),
            "{}",
            dns.reading
        );
        assert_eq!(c[1].paper[0].1, 61.0);
        assert!((c[1].ours[0].unwrap() - 125.0).abs() < 1e-9);

        let m = model(30e-6, 0.1e-6, &[(1, 20000.0), (2, 21000.0), (4, 21000.0)]);
        assert!((m[0].paper[0].1 - 0.583052311 / 0.032254983).abs() < 1e-9);
        assert!((m[1].paper[2].1 - 3.43 / 0.86).abs() < 1e-9);
        assert!((m[1].ours[2].unwrap() - 1.05).abs() < 1e-9);
        assert!(
            m[1].reading.contains("generator's core binds"),
            "{}",
            m[1].reading
        );

        let d = degradation(&[("threads".into(), 76.0), ("fair".into(), 7.0)]);
        assert_eq!((d[0].paper[0].1, d[0].paper[1].1), (97.0, 78.0));
        assert_eq!(d[0].ours, vec![Some(76.0), Some(7.0)]);

        let s = saturation(&[(1, 0.1), (2, 0.2), (4, 0.4), (8, 0.6)], Some(8));
        assert_eq!(s[0].paper[0].1, 64.0);
        assert_eq!(s[0].ours[0], Some(8.0));
        assert!((s[1].ours[0].unwrap() - 2.0).abs() < 1e-9);
    }
}
