//! Reads `perf script` output and adds each sample to its category.
//!
//! The input is what `perf script -F comm,pid,tid,ip,sym,dso` prints for a call-graph
//! recording: a header line per sample (`comm pid/tid`), then one line per frame, leaf first
//! (`\t ffffffff81e8f860 kfree_skbmem ([kernel.kallsyms])`), then a blank line. A sample
//! whose leaf is a user-space address is user time (the watched processes' or another's);
//! otherwise the kernel frames are tried leaf first against [`RULES`].

use std::collections::HashMap;
use std::io::BufRead;

use serde::{Deserialize, Serialize};

use super::rules::{categorise, Category, RULES};

/// Kernel addresses live in the top half of the 64-bit space (x86-64 and arm64 alike).
const KERNEL_START: u64 = 0xffff_0000_0000_0000;

/// One frame of a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    pub ip: u64,
    pub symbol: String,
    pub dso: String,
}

impl Frame {
    fn is_kernel(&self) -> bool {
        self.ip >= KERNEL_START
    }
}

/// One sample as `perf script` printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PerfSample {
    pub comm: String,
    pub pid: u32,
    pub tid: u32,
    /// Leaf first.
    pub frames: Vec<Frame>,
}

/// Why a sample went where it went: the category, the rule (if one decided) and the symbol
/// shown for it in the top lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub category: Category,
    pub rule: Option<usize>,
    pub label: String,
}

/// The header line: the command (which may hold spaces), then `pid/tid`.
fn parse_header(line: &str) -> Option<(String, u32, u32)> {
    let line = line.trim_end();
    let (comm, ids) = line.rsplit_once(char::is_whitespace)?;
    let (pid, tid) = match ids.split_once('/') {
        Some((p, t)) => (p.parse().ok()?, t.parse().ok()?),
        None => {
            let id = ids.parse().ok()?;
            (id, id)
        }
    };
    Some((comm.trim().to_string(), pid, tid))
}

/// A frame line: address, symbol (may hold spaces), then the DSO in parentheses.
fn parse_frame(line: &str) -> Option<Frame> {
    let line = line.trim();
    let (ip, rest) = line.split_once(char::is_whitespace)?;
    let ip = u64::from_str_radix(ip, 16).ok()?;
    let (symbol, dso) = match rest.rfind(" (") {
        Some(at) if rest.ends_with(')') => (&rest[..at], &rest[at + 2..rest.len() - 1]),
        _ => (rest, ""),
    };
    Some(Frame {
        ip,
        symbol: symbol.trim().to_string(),
        dso: dso.to_string(),
    })
}

/// Reads samples one at a time, calling `each` for every complete sample.
pub(crate) fn read_samples<R: BufRead>(
    input: R,
    mut each: impl FnMut(PerfSample),
) -> std::io::Result<()> {
    let mut current: Option<PerfSample> = None;
    // Bounded: a frame's line is a symbol, far below 64 KiB; a longer one is dropped.
    let mut lines = webscope_sys::LineReader::new(input, webscope_sys::MAX_LINE);
    while let Some(read) = lines.next_line()? {
        let webscope_sys::Line::Text(bytes) = read else {
            continue;
        };
        let line = String::from_utf8_lossy(bytes);
        if line.trim().is_empty() {
            if let Some(sample) = current.take() {
                each(sample);
            }
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        match (&mut current, indented) {
            (Some(sample), true) => {
                if let Some(frame) = parse_frame(&line) {
                    sample.frames.push(frame);
                }
            }
            _ => {
                if let Some(sample) = current.take() {
                    each(sample);
                }
                current = parse_header(&line).map(|(comm, pid, tid)| PerfSample {
                    comm,
                    pid,
                    tid,
                    frames: Vec::new(),
                });
            }
        }
    }
    if let Some(sample) = current {
        each(sample);
    }
    Ok(())
}

/// Where one sample goes.
pub(crate) fn decide(sample: &PerfSample, server_pids: &[u32]) -> Decision {
    let leaf = sample.frames.first();
    // No frames (a user-mode sample recorded with kernel call chains only) or a user leaf.
    if leaf.is_none_or(|f| !f.is_kernel()) {
        let server = server_pids.contains(&sample.pid);
        let label = match (server, leaf) {
            (true, Some(f)) if f.symbol != "[unknown]" => f.symbol.clone(),
            _ => sample.comm.clone(),
        };
        return Decision {
            category: if server {
                Category::UserServer
            } else {
                Category::UserOther
            },
            rule: None,
            label,
        };
    }
    for (i, frame) in sample
        .frames
        .iter()
        .take_while(|f| f.is_kernel())
        .enumerate()
    {
        if let Some((rule, category)) = categorise(&frame.symbol, i == 0) {
            return Decision {
                category,
                rule: Some(rule),
                label: frame.symbol.clone(),
            };
        }
    }
    Decision {
        category: Category::KernelOther,
        rule: None,
        label: leaf.map_or_else(String::new, |f| f.symbol.clone()),
    }
}

/// One category's share of the samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryShare {
    /// The category (`net_low`, `timers`...).
    pub category: Category,
    /// Its samples.
    pub samples: u64,
    /// Percent of all samples (every CPU, idle included).
    pub pct: f64,
    /// Percent of kernel samples, for kernel categories (the base of the paper's Figure 3).
    pub kernel_pct: Option<f64>,
    /// The functions (for user time of other processes: the commands) that took most of it.
    pub top: Vec<SymbolShare>,
}

/// A function's part of a category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SymbolShare {
    /// The function that decided the samples (or the command, for other processes' user time).
    pub symbol: String,
    /// Its samples.
    pub samples: u64,
    /// Percent of its category's samples.
    pub pct: f64,
}

/// A classified profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Samples classified (perf's own left out).
    pub samples: u64,
    /// Samples of `perf` itself, left out of the shares.
    pub profiler_samples: u64,
    /// Sampling frequency per CPU, Hz.
    pub frequency_hz: u32,
    /// Per category, in report order (all categories, even empty ones).
    pub categories: Vec<CategoryShare>,
    /// Kernel samples taken while a watched process was on the CPU, percent of all samples.
    pub server_kernel_pct: f64,
    /// Percent of kernel samples whose functions perf could not name (hidden symbols).
    pub unknown_kernel_pct: f64,
}

impl Profile {
    /// The share of `category`.
    pub fn share(&self, category: Category) -> Option<&CategoryShare> {
        self.categories.iter().find(|c| c.category == category)
    }
}

/// Adds samples up into a [`Profile`].
#[derive(Debug, Default)]
pub(crate) struct Tally {
    counts: HashMap<Category, (u64, HashMap<String, u64>)>,
    /// How many samples each rule decided (for the coverage test).
    pub rule_hits: Vec<u64>,
    samples: u64,
    profiler: u64,
    server_kernel: u64,
    unknown_kernel: u64,
}

impl Tally {
    pub fn add(&mut self, sample: &PerfSample, server_pids: &[u32], profiler_pid: Option<u32>) {
        if Some(sample.pid) == profiler_pid {
            self.profiler += 1;
            return;
        }
        let decision = decide(sample, server_pids);
        self.samples += 1;
        if self.rule_hits.is_empty() {
            self.rule_hits = vec![0; RULES.len()];
        }
        if let Some(rule) = decision.rule {
            self.rule_hits[rule] += 1;
        }
        if decision.category.is_kernel() {
            if server_pids.contains(&sample.pid) {
                self.server_kernel += 1;
            }
            if decision.label == "[unknown]" {
                self.unknown_kernel += 1;
            }
        }
        let entry = self.counts.entry(decision.category).or_default();
        entry.0 += 1;
        *entry.1.entry(decision.label).or_default() += 1;
    }

    pub fn profile(&self, frequency_hz: u32, top: usize) -> Profile {
        let pct = |n: u64, of: u64| {
            if of == 0 {
                0.0
            } else {
                n as f64 * 100.0 / of as f64
            }
        };
        let kernel: u64 = self
            .counts
            .iter()
            .filter(|(c, _)| c.is_kernel())
            .map(|(_, (n, _))| n)
            .sum();
        let categories = Category::ALL
            .iter()
            .map(|&category| {
                let (n, symbols) = self.counts.get(&category).cloned().unwrap_or_default();
                let mut symbols: Vec<(String, u64)> = symbols.into_iter().collect();
                symbols.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                CategoryShare {
                    category,
                    samples: n,
                    pct: pct(n, self.samples),
                    kernel_pct: category.is_kernel().then(|| pct(n, kernel)),
                    top: symbols
                        .into_iter()
                        .take(top)
                        .map(|(symbol, s)| SymbolShare {
                            symbol,
                            samples: s,
                            pct: pct(s, n),
                        })
                        .collect(),
                }
            })
            .collect();
        Profile {
            samples: self.samples,
            profiler_samples: self.profiler,
            frequency_hz,
            categories,
            server_kernel_pct: pct(self.server_kernel, self.samples),
            unknown_kernel_pct: pct(self.unknown_kernel, kernel),
        }
    }
}

/// Classifies a whole `perf script` output.
pub fn classify<R: BufRead>(
    input: R,
    server_pids: &[u32],
    profiler_pid: Option<u32>,
    frequency_hz: u32,
) -> std::io::Result<Profile> {
    let mut tally = Tally::default();
    read_samples(input, |s| tally.add(&s, server_pids, profiler_pid))?;
    Ok(tally.profile(frequency_hz, 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "\
lto cgu.0.rcgu. 18390/19770 
\tffffffff81635986 free_unref_folios ([kernel.kallsyms])
\tffffffff816565a7 do_madvise ([kernel.kallsyms])
\t          101b07 __madvise (/usr/lib/x86_64-linux-gnu/libc.so.6)

swapper     0/0     
\tffffffff8225fe6b pv_native_safe_halt ([kernel.kallsyms])
\tffffffff8225fff0 default_idle_call ([kernel.kallsyms])

webscope 42/43 
\t    55d0c0a1b2c3 httparse::parse_headers_iter (/usr/bin/webscope)

webscope 42/44 

";

    #[test]
    fn headers_and_frames_are_parsed_with_spaces_in_names() {
        let mut samples = Vec::new();
        read_samples(TWO.as_bytes(), |s| samples.push(s)).unwrap();
        assert_eq!(samples.len(), 4);
        assert_eq!(samples[0].comm, "lto cgu.0.rcgu.");
        assert_eq!((samples[0].pid, samples[0].tid), (18390, 19770));
        assert_eq!(samples[0].frames.len(), 3);
        assert_eq!(samples[0].frames[2].symbol, "__madvise");
        assert_eq!(
            samples[0].frames[2].dso,
            "/usr/lib/x86_64-linux-gnu/libc.so.6"
        );
        assert_eq!(samples[1].comm, "swapper");
        assert!(samples[3].frames.is_empty());
    }

    #[test]
    fn samples_are_decided_by_leaf_space_and_nearest_rule() {
        let mut samples = Vec::new();
        read_samples(TWO.as_bytes(), |s| samples.push(s)).unwrap();
        let d: Vec<Decision> = samples.iter().map(|s| decide(s, &[42])).collect();
        assert_eq!(d[0].category, Category::KernelOther);
        assert_eq!(d[0].label, "free_unref_folios");
        assert_eq!(d[1].category, Category::Idle);
        assert_eq!(d[2].category, Category::UserServer);
        assert_eq!(d[2].label, "httparse::parse_headers_iter");
        assert_eq!(d[3].category, Category::UserServer, "no frames: user mode");
        let other = decide(&samples[2], &[7]);
        assert_eq!(
            (other.category, other.label.as_str()),
            (Category::UserOther, "webscope")
        );
    }

    #[test]
    fn shares_add_up_and_the_profiler_is_left_out() {
        let profile = classify(TWO.as_bytes(), &[42], Some(18390), 499).unwrap();
        assert_eq!(profile.samples, 3);
        assert_eq!(profile.profiler_samples, 1);
        let total: f64 = profile.categories.iter().map(|c| c.pct).sum();
        assert!((total - 100.0).abs() < 1e-9);
        assert_eq!(profile.share(Category::UserServer).unwrap().samples, 2);
        assert_eq!(profile.share(Category::Idle).unwrap().kernel_pct, None);
        assert_eq!(profile.categories.len(), Category::ALL.len());
    }
}

#[cfg(test)]
mod fixtures {
    //! The rules on recorded `perf script` output (bench/monitor_profile_fixture.sh: webscope
    //! serve under `load --close` with disk, IPv6, UDP and tmpfs work beside it; samples cut
    //! and their categories reviewed by hand) and on synthetic samples for what this
    //! machine lacks.
    use super::*;

    /// The samples of a fixture, their expected categories, and the server's pid.
    fn load(text: &str, expected: &str) -> (Vec<PerfSample>, Vec<String>, Vec<u32>) {
        let mut samples = Vec::new();
        read_samples(text.as_bytes(), |s| samples.push(s)).unwrap();
        let server: Vec<u32> = expected
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# server pid "))
            .and_then(|l| l.split(';').next())
            .and_then(|p| p.parse().ok())
            .into_iter()
            .collect();
        let labels: Vec<String> = expected
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect();
        assert_eq!(samples.len(), labels.len(), "one label per sample");
        (samples, labels, server)
    }

    /// Checks every decision against its label and returns how often each rule decided.
    fn check(text: &str, expected: &str) -> Vec<u64> {
        let (samples, labels, server) = load(text, expected);
        let mut hits = vec![0; RULES.len()];
        let mut wrong = Vec::new();
        for (i, (sample, label)) in samples.iter().zip(&labels).enumerate() {
            let decision = decide(sample, &server);
            if decision.category.name() != label {
                wrong.push(format!(
                    "sample {i} ({} {}): expected {label}, got {} by {}",
                    sample.comm,
                    sample.frames.first().map_or("", |f| f.symbol.as_str()),
                    decision.category.name(),
                    decision.label
                ));
            }
            if let Some(rule) = decision.rule {
                hits[rule] += 1;
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        hits
    }

    #[test]
    fn every_recorded_sample_lands_where_reviewed_and_every_rule_is_exercised() {
        let hits = check(
            include_str!("../../tests/data/perf_script.txt"),
            include_str!("../../tests/data/perf_script.expected"),
        );
        let untested: Vec<&str> = RULES
            .iter()
            .zip(&hits)
            .filter(|(r, n)| !r.synthetic && **n == 0)
            .map(|(r, _)| r.pattern)
            .collect();
        assert!(
            untested.is_empty(),
            "rules no recorded sample exercises: {untested:?}"
        );
    }

    #[test]
    fn every_synthetic_rule_is_exercised_on_synthetic_samples() {
        let hits = check(
            include_str!("../../tests/data/perf_script_synthetic.txt"),
            include_str!("../../tests/data/perf_script_synthetic.expected"),
        );
        let untested: Vec<&str> = RULES
            .iter()
            .zip(&hits)
            .filter(|(r, n)| r.synthetic && **n == 0)
            .map(|(r, _)| r.pattern)
            .collect();
        assert!(
            untested.is_empty(),
            "synthetic rules without a sample: {untested:?}"
        );
    }

    #[test]
    fn the_recorded_profile_adds_up() {
        let (_, _, server) = load(
            include_str!("../../tests/data/perf_script.txt"),
            include_str!("../../tests/data/perf_script.expected"),
        );
        let profile = classify(
            include_str!("../../tests/data/perf_script.txt").as_bytes(),
            &server,
            None,
            1999,
        )
        .unwrap();
        let all: f64 = profile.categories.iter().map(|c| c.pct).sum();
        let kernel: f64 = profile.categories.iter().filter_map(|c| c.kernel_pct).sum();
        assert!((all - 100.0).abs() < 1e-9 && (kernel - 100.0).abs() < 1e-9);
        assert!(profile.share(Category::UserServer).unwrap().samples > 0);
        assert!(
            profile.server_kernel_pct > 0.0,
            "the server made system calls"
        );
        assert_eq!(profile.unknown_kernel_pct, 0.0);
    }
}
