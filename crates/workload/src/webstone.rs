//! WebStone "workload A" of Yates, Almeida & Almeida (1997), Table 1, and its size-scaled
//! variants A/4, A/2, A*2, A*4 (Table 2).
//!
//! | class  | files | total KB | access (total) | access (each) |
//! |--------|------:|---------:|---------------:|--------------:|
//! | html   | 24    | 180      | 0.192          | 0.008         |
//! | image  | 29    | 385      | 0.754          | 0.026         |
//! | sound  | 20    | 3580     | 0.05           | 0.0025        |
//! | video  | 4     | 9216     | 0.004          | 0.001         |
//!
//! The paper gives only each class's total, so the files of a class get whole-KB sizes spread
//! evenly from half to one and a half times the class's average, summing exactly to the total.
//! The variants multiply every size by 2 or 4, or divide it and truncate to whole KB (at
//! least 1 KB), as a WebStone file list in KB would: the paper blames "truncation and
//! rounding" for its averages not doubling exactly. The access-weighted mean sizes then come
//! within 2 % of Table 2 (7.00, 14.82, 29.31, 58.73, 117.46 KB).

use crate::manifest::{File, Manifest};
use crate::Error;

/// Names of the four classes.
pub const CLASSES: [&str; 4] = ["html", "image", "sound", "video"];

/// Per class: number of files, total size in KB, access probability of each file, and the
/// file name pattern's extension.
const TABLE_1: [(usize, u64, f64, &str); 4] = [
    (24, 180, 0.008, "html"),
    (29, 385, 0.026, "gif"),
    (20, 3580, 0.0025, "wav"),
    (4, 9216, 0.001, "mpg"),
];

/// The scales the paper used, with Table 2's mean file size in KB for each.
pub const TABLE_2: [(f64, f64); 5] = [
    (0.25, 7.00),
    (0.5, 14.82),
    (1.0, 29.31),
    (2.0, 58.73),
    (4.0, 117.46),
];

/// Sizes in KB of the `n` files of a class totalling `total_kb`.
fn class_sizes_kb(n: usize, total_kb: u64) -> Vec<u64> {
    let average = total_kb as f64 / n as f64;
    let mut sizes: Vec<u64> = (0..n)
        .map(|i| (average * (0.5 + i as f64 / (n - 1) as f64)).round() as u64)
        .collect();
    let sum: u64 = sizes.iter().sum();
    // Rounding leaves the sum a few KB off: the largest file absorbs the difference.
    if let Some(last) = sizes.last_mut() {
        *last = (*last + total_kb).saturating_sub(sum);
    }
    sizes
}

/// A size in KB at `scale`: multiplied, or divided and truncated to whole KB (at least 1).
fn scaled_kb(kb: u64, scale: f64) -> u64 {
    if scale >= 1.0 {
        (kb as f64 * scale).round() as u64
    } else {
        ((kb as f64 * scale).floor() as u64).max(1)
    }
}

/// Plans workload A scaled by `scale` (one of 0.25, 0.5, 1, 2, 4).
pub fn plan(scale: f64, seed: u64) -> Result<Manifest, Error> {
    if !TABLE_2.iter().any(|(s, _)| *s == scale) {
        return Err(Error::Invalid(format!(
            "--scale must be one of 0.25, 0.5, 1, 2, 4 (A/4 .. A*4), not {scale}"
        )));
    }
    let mut files = Vec::new();
    for (class, &(n, total_kb, probability, ext)) in TABLE_1.iter().enumerate() {
        for (i, kb) in class_sizes_kb(n, total_kb).into_iter().enumerate() {
            files.push(File {
                path: format!("{name}/{name}{i:02}.{ext}", name = CLASSES[class]),
                size: scaled_kb(kb, scale) * 1024,
                class: CLASSES[class].to_string(),
                probability,
            });
        }
    }
    let label = match scale {
        s if s < 1.0 => format!("A/{}", (1.0 / s).round()),
        s if s > 1.0 => format!("A*{}", s.round()),
        _ => "A".to_string(),
    };
    Ok(Manifest::assemble(
        "webstone-a",
        format!("WebStone workload {label} (Yates, Almeida & Almeida 1997, Tables 1-2): 77 files"),
        seed,
        serde_json::json!({ "scale": scale }),
        &CLASSES,
        files,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_a_has_table_1s_counts_totals_and_probabilities() {
        let m = plan(1.0, 1).unwrap();
        assert!(m.check().is_ok());
        for (class, &(n, total_kb, each, _)) in m.classes.iter().zip(TABLE_1.iter()) {
            assert_eq!(class.files, n as u64, "{}", class.name);
            assert_eq!(class.bytes, total_kb * 1024, "{}", class.name);
            assert!((class.probability - each * n as f64).abs() < 1e-9);
        }
        let probs: Vec<f64> = m.classes.iter().map(|c| c.probability).collect();
        assert_eq!(m.files.len(), 77);
        assert!((probs[0] - 0.192).abs() < 1e-9 && (probs[1] - 0.754).abs() < 1e-9);
    }

    #[test]
    fn mean_sizes_match_table_2_within_2_percent() {
        for (scale, kb) in TABLE_2 {
            let m = plan(scale, 1).unwrap();
            let mean_kb = m.mean_response_bytes / 1024.0;
            let off = (mean_kb / kb - 1.0).abs();
            assert!(
                off < 0.02,
                "scale {scale}: {mean_kb:.2} KB vs {kb} ({:.1} %)",
                off * 100.0
            );
        }
    }

    #[test]
    fn class_sizes_spread_and_sum() {
        let sizes = class_sizes_kb(24, 180);
        assert_eq!(sizes.iter().sum::<u64>(), 180);
        assert!(sizes[0] < sizes[23]);
        assert_eq!(class_sizes_kb(4, 9216), vec![1152, 1920, 2688, 3456]);
    }

    #[test]
    fn unknown_scales_are_refused() {
        for scale in [0.0, 3.0, -1.0, 0.3] {
            assert!(plan(scale, 1).is_err());
        }
    }
}
