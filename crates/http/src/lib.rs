//! placeholder (the lead is writing this crate now)
pub mod response;
