//! The kernel-time breakdown of `--profile`: `perf record -a -g` during the run, then each
//! sample put into one of Yates et al.'s categories by a table of rules ([`rules::RULES`]).

pub(crate) mod classify;
pub(crate) mod perf;
pub mod rules;

pub use classify::{classify, CategoryShare, Profile, SymbolShare};
pub use rules::Category;
