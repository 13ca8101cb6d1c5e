//! The capacity experiment's parts: how much traffic a server carries within a latency
//! objective. [`search`] chooses the offered rates (grow, then bisect, with repeats at the
//! boundary); the objective's grammar and verdicts are `webscope_load::slo`'s.

pub mod search;
