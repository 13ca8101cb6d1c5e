//! The machine's speed while a search ran, as the page and report.json say it: the mean of
//! the reference loop's readings before every probe ([`webscope_lab::step::Reference`]),
//! and how well that mean is known. `compare` sets two searches' means side by side
//! ([`webscope_lab::capacity::compare`]).
//!
//! Not for: reading the loop (`webscope_monitor::reference`), nor judging probes with it (one
//! reading is too noisy for that).

use webscope_lab::results::capacity::MachineReference;
use webscope_monitor::reference::Speed;
use webscope_report::human::pct_brief;

use webscope_lab::capacity::compare::{MACHINE_LIMIT, MACHINE_Z};
use webscope_lab::step::Judged;

/// A search's machine: its readings summed up, the CPU they were read on (None when the
/// server was not pinned), and the standard error of their mean.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// The readings of the reference loop, summed over the search's probes.
    pub speed: Speed,
    /// The CPU the readings were taken on: the server's pinned CPU (None: not pinned).
    pub cpu: Option<usize>,
    /// Probes with readings.
    pub probes: usize,
    /// The standard error of the mean, ms, from the spread of the probes' own means: a
    /// probe's readings are taken within 100 ms and move together (the machine's slow and
    /// fast spells last seconds), while probes seconds apart were measured nearly
    /// independent (lag-1 autocorrelation of their means 0.0-0.4 on nginx searches). None
    /// below two probes.
    pub se_ms: Option<f64>,
}

/// The search's machine; None when no probe has readings.
pub fn speed(probes: &[Judged]) -> Option<Machine> {
    let refs: Vec<_> = probes.iter().filter_map(|j| j.reference.as_ref()).collect();
    let readings: Vec<f64> = refs.iter().flat_map(|r| r.ms.iter().copied()).collect();
    let means: Vec<f64> = refs
        .iter()
        .filter(|r| !r.ms.is_empty())
        .map(|r| r.ms.iter().sum::<f64>() / r.ms.len() as f64)
        .filter(|m| m.is_finite())
        .collect();
    Some(Machine {
        speed: Speed::of(&readings)?,
        cpu: refs.first().and_then(|r| r.cpu),
        probes: means.len(),
        se_ms: standard_error(&means),
    })
}

fn standard_error(values: &[f64]) -> Option<f64> {
    let n = values.len() as f64;
    if values.len() < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((variance / n).sqrt())
}

/// The page's sentence.
pub fn sentence(m: &Machine) -> String {
    let on = m.cpu.map_or("unpinned, as the server".into(), |c| {
        format!("on the server's CPU {c}")
    });
    let se = m.se_ms.map_or(String::new(), |se| {
        format!(
            ", mean ± {se:.2} ms (standard error over the {} probes)",
            m.probes
        )
    });
    format!(
        "The machine's speed: a reference loop (a fixed amount of work: random reads over 16 MiB and four chains of multiplies) took {:.1} ms of its thread's CPU time on average over {} readings, taken before each measured run {on} (p10 {:.1}, median {:.1}, p90 {:.1} ms{se}). On a shared machine this moves between searches while nothing in /proc does (the host's other tenants take the core's sibling, its cache, its memory bandwidth), and the capacity can move with it (on 2-vCPU VMs, a host whose loop ran 1.8 times as fast carried nginx 1.9 times as fast; within one host, one run of searches whose loop ran 3 % slower found capacities 10-25 % lower, and the next run did not): compare does not decide a change the machine's own could have made, when the two means differ by more than {} or by more than their standard errors allow (z above {MACHINE_Z}).",
        m.speed.mean_ms,
        m.speed.samples,
        m.speed.p10_ms,
        m.speed.median_ms,
        m.speed.p90_ms,
        pct_brief(MACHINE_LIMIT)
    )
}

/// report.json's `machine_reference`.
pub fn entry(m: &Machine) -> MachineReference {
    let s = &m.speed;
    MachineReference {
        samples: s.samples,
        mean_ms: Some(s.mean_ms),
        median_ms: Some(s.median_ms),
        p10_ms: Some(s.p10_ms),
        p90_ms: Some(s.p90_ms),
        cpu: m.cpu,
        probes: m.probes,
        se_ms: m.se_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::standard_error;

    #[test]
    fn the_standard_error_is_the_probes_means_spread_over_root_n() {
        // Sample standard deviation 1 over three probes: 1/√3.
        let se = standard_error(&[19.0, 20.0, 21.0]).unwrap();
        assert!((se - 1.0 / 3f64.sqrt()).abs() < 1e-12, "{se}");
        assert_eq!(standard_error(&[20.0]), None);
    }
}
