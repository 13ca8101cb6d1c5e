//! `fileset like --synthetic` against the log it came from (#35 item 3): the files' sizes pass
//! a two-sample Kolmogorov-Smirnov test against the log's documents' sizes, and the set's
//! popularity has the log's Zipf exponent.

mod lab_support;

use lab_support::webscope;
use serde_json::Value;

/// A fixed sequence of uniforms in (0, 1) (SplitMix64), so the log is the same every run.
struct Uniform(u64);

impl Uniform {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 + 1e-12
    }

    /// A lognormal size (μ = 9.4, σ = 1.5 in ln bytes: the body issue #35 saw).
    fn size(&mut self) -> u64 {
        let normal = (-2.0 * self.next().ln()).sqrt() * (std::f64::consts::TAU * self.next()).cos();
        (9.4 + 1.5 * normal).exp().round().max(1.0) as u64
    }
}

/// The largest distance between the empirical distributions of `a` and `b`.
fn ks(a: &mut [f64], b: &mut [f64]) -> f64 {
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
    }
    d
}

/// The least-squares slope of ln p against ln rank over the first `n` ranks, negated.
fn zipf(probabilities: &[f64], n: usize) -> f64 {
    let points: Vec<(f64, f64)> = probabilities[..n]
        .iter()
        .enumerate()
        .map(|(r, p)| (((r + 1) as f64).ln(), p.ln()))
        .collect();
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n as f64;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n as f64;
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    -sxy / sxx
}

#[test]
fn a_synthetic_set_has_the_logs_sizes_and_popularity() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    // 300 documents of lognormal sizes; rank r asked for 3000/r times (Zipf 1).
    let mut u = Uniform(35);
    let mut sizes = Vec::new();
    let mut text = String::new();
    for r in 1..=300u64 {
        let size = u.size();
        sizes.push(size as f64);
        for i in 0..(3000 / r) {
            text += &format!(
                "10.1.0.{} - - [25/Nov/2026:10:{:02}:{:02} +0000] \"GET /doc{r}.html HTTP/1.1\" 200 {size} \"-\" \"agent\"\n",
                i % 9,
                (i / 60) % 60,
                i % 60
            );
        }
    }
    std::fs::write(&log, text).unwrap();
    let set = tmp.path().join("set");
    let out = webscope()
        .args([
            "fileset",
            "like",
            "--synthetic",
            "1000",
            "--dry-run",
            "-q",
            "--out",
        ])
        .arg(&set)
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("drawn from the fits"), "{stdout}");
    // --dry-run writes nothing: the plan comes again, written, for its manifest.
    let out = webscope()
        .args(["fileset", "like", "--synthetic", "1000", "-q", "--out"])
        .arg(&set)
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(set.join("manifest.json")).unwrap()).unwrap();
    let files = manifest["files"].as_array().unwrap();
    let mut drawn: Vec<f64> = files.iter().map(|f| f["size"].as_f64().unwrap()).collect();
    // KS at the 1 % level: D below 1.63 √((n+m)/(nm)).
    let (n, m) = (sizes.len() as f64, drawn.len() as f64);
    let critical = 1.63 * ((n + m) / (n * m)).sqrt();
    let d = ks(&mut sizes, &mut drawn);
    eprintln!(
        "KS D {d:.3} (1 % critical {critical:.3}): {}",
        manifest["description"]
    );
    assert!(
        d < critical,
        "sizes differ: KS D {d:.3} >= {critical:.3} ({})",
        manifest["description"]
    );
    // Popularity: the same Zipf exponent over the top 100 ranks, within 0.1.
    let p: Vec<f64> = files
        .iter()
        .map(|f| f["probability"].as_f64().unwrap())
        .collect();
    let s = zipf(&p, 100);
    assert!((s - 1.0).abs() < 0.1, "Zipf {s:.3}");
    std::fs::remove_dir_all(&set).unwrap();
}
