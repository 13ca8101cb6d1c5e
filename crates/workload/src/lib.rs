//! File sets and request mixes: the papers' workloads, deterministic from a seed.
//!
//! What it is for: making the files a web server under test serves, exactly as the papers
//! defined them, and telling the load generator how often each file is asked for.
//!
//! - [`Spec::SpecWeb96`]: the SPECweb96 set of Hu, Nanda & Yang's Tables 1-2: directories of
//!   36 files in four size classes requested 35 / 50 / 14 / 1 %, the number of directories
//!   10·√(N/5) for an expected N ops/s (see [`specweb96`]).
//! - [`Spec::WebStoneA`]: WebStone "workload A" of Yates, Almeida & Almeida (Table 1: HTML,
//!   images, sound, video) and its size-scaled variants A/4 .. A*4 (Table 2).
//! - [`Spec::HeavyTail`]: SURGE-like lognormal body and Pareto tail with Zipf popularity.
//! - [`Spec::Single`]: one file, for ab-style tests.
//! - [`like::plan`]: a set like a site's, from the paths, sizes and counts of its access log.
//!
//! [`Spec::plan`] gives a [`Manifest`] (every file's path, size, class and access
//! probability) without touching the disk; [`Manifest::replicate`] makes K copies for cache
//! avoidance; [`write()`] puts the files and `manifest.json` on disk, atomically (a directory
//! with a manifest is always a complete set); [`Manifest::load`] reads it back, and
//! [`Mix`] draws files by probability in constant time for the load generator.
//!
//! What it is not: an HTTP client or a server; it never opens a socket.
//!
//! ```
//! use webscope_workload::{Mix, Rng, Spec};
//! let manifest = Spec::SpecWeb96 { ops: 10.0 }.plan(1).unwrap();
//! assert_eq!(manifest.classes.len(), 4);
//! let mix = Mix::new(&manifest.files.iter().map(|f| f.probability).collect::<Vec<_>>()).unwrap();
//! let file = &manifest.files[mix.sample(&mut Rng::new(42))];
//! assert!(file.path.starts_with("dir"));
//! ```
//!
//! Why this design: plans are pure functions of their parameters and the seed (our own
//! [`Rng`], whose output is fixed forever, unlike general-purpose crates'), so a set can be
//! recreated anywhere from its manifest's header, tests can check sizes and probabilities
//! against the papers' tables without writing gigabytes, and the writer is the only part
//! that deals with the file system's failures.
#![deny(missing_docs)]

mod content;
mod error;
pub mod heavy_tail;
pub mod like;
mod manifest;
mod mix;
mod owned;
mod rng;
mod size;
mod spec;
pub mod specweb96;
pub mod webstone;
mod write;

pub use error::Error;
pub use manifest::{Class, File, Manifest, FORMAT, MANIFEST, MARKER, MAX_FILES};
pub use mix::Mix;
pub use rng::Rng;
pub use size::parse_size;
pub use spec::Spec;
pub use write::{content, write, write_with, WriteOptions};
