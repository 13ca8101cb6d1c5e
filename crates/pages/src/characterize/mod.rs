//! `webscope characterize`'s page and terminal summary, from the access logs' figures
//! (`webscope_accesslog::characterize`). Reading the logs is the access-log crate's; this
//! module only says what it found.

pub mod page;
pub mod sessions;
pub mod summary;
#[cfg(test)]
mod tests;
