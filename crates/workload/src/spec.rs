//! Which file set to make: the one type the CLI fills from its flags.

use crate::manifest::{File, Manifest};
use crate::{heavy_tail, specweb96, webstone, Error};

/// A file set to generate.
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    /// SPECweb96, sized for an expected throughput in operations per second.
    SpecWeb96 {
        /// Expected throughput (ops/s) the set is scaled for.
        ops: f64,
    },
    /// WebStone workload A of the Yates paper, its sizes multiplied by `scale`.
    WebStoneA {
        /// 0.25, 0.5, 1, 2 or 4 (A/4 .. A*4).
        scale: f64,
    },
    /// SURGE-like heavy-tailed sizes with Zipf popularity.
    HeavyTail {
        /// Number of files.
        files: u64,
        /// Mean file size in bytes.
        mean: u64,
        /// Zipf exponent of popularity.
        zipf: f64,
    },
    /// One file (ab-style tests).
    Single {
        /// Its size in bytes.
        size: u64,
    },
}

impl Spec {
    /// The files, sizes and probabilities of the set (nothing is written).
    pub fn plan(&self, seed: u64) -> Result<Manifest, Error> {
        match *self {
            Spec::SpecWeb96 { ops } => specweb96::plan(ops, seed),
            Spec::WebStoneA { scale } => webstone::plan(scale, seed),
            Spec::HeavyTail { files, mean, zipf } => heavy_tail::plan(files, mean, zipf, seed),
            Spec::Single { size } => Ok(single(size, seed)),
        }
    }
}

fn single(size: u64, seed: u64) -> Manifest {
    let class = heavy_tail::CLASSES[heavy_tail::size_class(size)];
    Manifest::assemble(
        "single",
        format!("one file of {size} bytes"),
        seed,
        serde_json::json!({ "size": size }),
        &[class],
        vec![File {
            path: format!("file-{size}.bin"),
            size,
            class: class.to_string(),
            probability: 1.0,
        }],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_is_one_certain_file() {
        let m = Spec::Single { size: 1024 }.plan(1).unwrap();
        assert_eq!(m.files.len(), 1);
        assert_eq!(m.files[0].probability, 1.0);
        assert_eq!(m.classes[0].name, "1-10KB");
        assert_eq!(m.total_bytes, 1024);
        let empty = Spec::Single { size: 0 }.plan(1).unwrap();
        assert_eq!(empty.files[0].size, 0);
        assert!(empty.check().is_ok());
    }
}
