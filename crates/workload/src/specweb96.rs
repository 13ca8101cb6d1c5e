//! The SPECweb96 file set (SPEC 1996; the Hu, Nanda & Yang paper's Tables 1 and 2).
//!
//! Each directory holds 36 files in four classes of nine sizes: class 0 is 102 to 921 bytes
//! (tenths of a KB, truncated; SPEC's table prints the last one as 922), class 1 is 1 to 9 KB, class 2 is 10 to 90 KB, class 3 is 100 to 900 KB
//! (KB = 1024 bytes), so one directory is 5,119,484 bytes (4.88 MiB). Requests go 35 / 50 /
//! 14 / 1 % to the classes; within a class they follow a Poisson distribution centred on the
//! middle file (mean 4 over the files 0..8, truncated to them), as SPEC describes it, and
//! directories are equally likely.
//!
//! The benchmark scales the set with the expected throughput N (ops/s): the number of
//! directories is 10·√(N/5). This reproduces the published table (1 op/s → 22 MB,
//! 10 → 69 MB, 1000 → 690 MB, MB = 2^20 bytes) only if the fraction is kept, so the last,
//! partial directory holds the k smallest files of each class, k chosen so that its bytes
//! are the closest to the fraction of a full directory (k(k+1)/90 of it), and it is chosen
//! by requests in proportion to that share. Whole-directory rounding would be 11 % off the
//! table at 1 op/s.

use crate::manifest::{File, Manifest};
use crate::Error;

/// Names of the four classes.
pub const CLASSES: [&str; 4] = ["class0", "class1", "class2", "class3"];

/// The share of requests that go to each class.
pub const CLASS_PROBABILITY: [f64; 4] = [0.35, 0.50, 0.14, 0.01];

/// The size in bytes of file `index` (0..9) of class `class` (0..4).
pub fn file_size(class: usize, index: usize) -> u64 {
    // Class 0 is in tenths of a KB, truncated as SPEC's table has it (102, 204, ... 921).
    let unit = [102.4, 1024.0, 10_240.0, 102_400.0][class];
    (unit * (index + 1) as f64) as u64
}

/// Bytes of one full directory.
pub fn directory_bytes() -> u64 {
    (0..4)
        .flat_map(|c| (0..9).map(move |i| file_size(c, i)))
        .sum()
}

/// The benchmark's number of directories for `ops` expected operations per second.
pub fn directories(ops: f64) -> f64 {
    10.0 * (ops / 5.0).sqrt()
}

/// Weights of the nine files of a class: Poisson(4) at 0..8, renormalised over the first
/// `present` files.
fn within_class_weights(present: usize) -> Vec<f64> {
    let lambda: f64 = 4.0;
    let mut weights = Vec::with_capacity(present);
    let mut term = (-lambda).exp();
    for i in 0..present {
        if i > 0 {
            term *= lambda / i as f64;
        }
        weights.push(term);
    }
    let sum: f64 = weights.iter().sum();
    weights.iter().map(|w| w / sum).collect()
}

/// How many files of each class the partial directory holds for a fraction `frac` of a
/// directory: the k whose byte share k(k+1)/90 is the closest (0 = no partial directory).
fn partial_files(frac: f64) -> usize {
    (0..=9usize)
        .min_by(|&a, &b| {
            let share = |k: usize| (k * (k + 1)) as f64 / 90.0;
            (share(a) - frac).abs().total_cmp(&(share(b) - frac).abs())
        })
        .unwrap_or(0)
}

/// Plans the SPECweb96 set for `ops` expected operations per second.
pub fn plan(ops: f64, seed: u64) -> Result<Manifest, Error> {
    if !(ops.is_finite() && ops > 0.0) {
        return Err(Error::Invalid(format!(
            "--ops must be a positive number of operations per second, not {ops}"
        )));
    }
    let dirs = directories(ops);
    if dirs * 36.0 > crate::manifest::MAX_FILES as f64 {
        return Err(Error::Invalid(format!(
            "--ops {ops} asks for {:.0} files; give at most 3.8e9 ops/s (10 million files)",
            dirs * 36.0
        )));
    }
    let full = dirs.floor() as usize;
    let partial = partial_files(dirs - full as f64);
    // (files per class, weight of the directory among all)
    let mut layout: Vec<(usize, f64)> = vec![(9, 1.0); full];
    if partial > 0 {
        layout.push((partial, (partial * (partial + 1)) as f64 / 90.0));
    }
    let total_weight: f64 = layout.iter().map(|(_, w)| w).sum();
    let full_weights = within_class_weights(9);
    let mut files = Vec::with_capacity(layout.len() * 36);
    for (dir, &(present, weight)) in layout.iter().enumerate() {
        let partial_weights;
        let weights = if present == 9 {
            &full_weights
        } else {
            partial_weights = within_class_weights(present);
            &partial_weights
        };
        for (class, name) in CLASSES.iter().enumerate() {
            for (index, w) in weights.iter().enumerate() {
                files.push(File {
                    path: format!("dir{dir:05}/{name}_{index}"),
                    size: file_size(class, index),
                    class: name.to_string(),
                    probability: weight / total_weight * CLASS_PROBABILITY[class] * w,
                });
            }
        }
    }
    let description = describe(ops, dirs, full, partial);
    Ok(Manifest::assemble(
        "specweb96",
        description,
        seed,
        serde_json::json!({ "ops": ops }),
        &CLASSES,
        files,
    ))
}

/// The set in words: the benchmark's directory count, and the directories that hold it. The
/// count is of bytes (SPEC's 10·√(N/5) keeps its fraction in a partial directory of the
/// smallest files), so it is not the files over 36: 4.47 directories at 1 op/s are 4 full
/// ones and a fifth of 24 files, 168 in all, which a reader dividing by 36 takes for 4.67.
fn describe(ops: f64, dirs: f64, full: usize, partial: usize) -> String {
    let formula = format!("10*sqrt({ops}/5) = {dirs:.2} directories' worth of bytes");
    let fulls = match full {
        1 => "1 full directory of 36 files".to_string(),
        n => format!("{n} full directories of 36 files"),
    };
    if partial == 0 {
        return format!("SPECweb96 file set for {ops} ops/s: {formula}, {fulls}");
    }
    format!(
        "SPECweb96 file set for {ops} ops/s: {formula}, {fulls} and one of {} (the {partial} smallest of each class, {:.3} of a directory's bytes)",
        4 * partial,
        (partial * (partial + 1)) as f64 / 90.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table 1 of Hu, Nanda & Yang (1999): expected ops/s and file set size in MB.
    const TABLE_1: [(f64, f64); 10] = [
        (1.0, 22.0),
        (2.0, 31.0),
        (5.0, 49.0),
        (10.0, 69.0),
        (20.0, 98.0),
        (50.0, 154.0),
        (100.0, 218.0),
        (200.0, 309.0),
        (500.0, 488.0),
        (1000.0, 690.0),
    ];

    #[test]
    fn set_sizes_match_the_papers_table_1_within_3_percent() {
        for (ops, mb) in TABLE_1 {
            let m = plan(ops, 1).unwrap();
            let ours = m.total_bytes as f64 / (1u64 << 20) as f64;
            let off = (ours / mb - 1.0).abs();
            assert!(
                off < 0.03,
                "{ops} ops/s: {ours:.1} MB vs {mb} MB ({:.1} %)",
                off * 100.0
            );
        }
    }

    #[test]
    fn sizes_are_specs_table_2() {
        assert_eq!(file_size(0, 0), 102);
        assert_eq!(file_size(0, 8), 921);
        assert_eq!(file_size(1, 0), 1024);
        assert_eq!(file_size(2, 8), 92_160);
        assert_eq!(file_size(3, 8), 921_600);
        assert_eq!(directory_bytes(), 5_119_484);
    }

    #[test]
    fn classes_get_35_50_14_1_percent_and_sizes_stay_in_class() {
        for ops in [1.0, 3.0, 10.0] {
            let m = plan(ops, 1).unwrap();
            assert!(m.check().is_ok());
            let got: Vec<f64> = m.classes.iter().map(|c| c.probability).collect();
            for (g, want) in got.iter().zip(CLASS_PROBABILITY) {
                assert!((g - want).abs() < 1e-9, "{got:?}");
            }
            let bounds = [
                (0, 1024),
                (1024, 10_240),
                (10_240, 102_400),
                (102_400, 1_048_576),
            ];
            for f in &m.files {
                let c = CLASSES.iter().position(|n| *n == f.class).unwrap();
                assert!(f.size >= bounds[c].0 && f.size < bounds[c].1, "{f:?}");
            }
        }
    }

    #[test]
    fn within_a_class_the_middle_file_is_the_most_requested() {
        let m = plan(5.0, 1).unwrap();
        assert_eq!(m.files.len(), 10 * 36);
        let dir0: Vec<&File> = m
            .files
            .iter()
            .filter(|f| f.path.starts_with("dir00000/class1_"))
            .collect();
        let best = dir0
            .iter()
            .max_by(|a, b| a.probability.total_cmp(&b.probability))
            .unwrap();
        // Poisson(4) peaks at 3 and 4 (equal); the first of the two wins the tie.
        assert!(
            best.path.ends_with("_3") || best.path.ends_with("_4"),
            "{}",
            best.path
        );
        assert!(dir0[0].probability < dir0[4].probability / 5.0);
    }

    #[test]
    fn partial_directory_for_a_fraction() {
        assert_eq!(partial_files(0.0), 0);
        assert_eq!(partial_files(0.47), 6);
        assert_eq!(partial_files(0.99), 9);
        let m = plan(1.0, 1).unwrap();
        // 10*sqrt(1/5) = 4.47 directories: four full ones and a partial fifth.
        assert!(m.files.iter().any(|f| f.path.starts_with("dir00004/")));
        assert!(!m.files.iter().any(|f| f.path.starts_with("dir00005/")));
        assert_eq!(
            m.files
                .iter()
                .filter(|f| f.path.starts_with("dir00004/"))
                .count(),
            4 * 6
        );
    }

    #[test]
    fn the_description_counts_the_directories_and_files_it_holds() {
        // #52 §6: "4.47 directories of 36 files" for 168 files, which read as 4.67.
        let m = plan(1.0, 1).unwrap();
        assert_eq!(m.files.len(), 168);
        assert_eq!(
            m.description,
            "SPECweb96 file set for 1 ops/s: 10*sqrt(1/5) = 4.47 directories' worth of bytes, 4 full directories of 36 files and one of 24 (the 6 smallest of each class, 0.467 of a directory's bytes)"
        );
        // A whole number of directories has no partial one to explain.
        let m = plan(5.0, 1).unwrap();
        assert_eq!(m.files.len(), 360);
        assert!(
            m.description.ends_with(
                "10*sqrt(5/5) = 10.00 directories' worth of bytes, 10 full directories of 36 files"
            ),
            "{}",
            m.description
        );
    }

    #[test]
    fn bad_ops_are_refused() {
        for ops in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(plan(ops, 1).is_err());
        }
    }
}
