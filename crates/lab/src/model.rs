//! The `model` experiment (Mughal §3): a client sweep of its own, from which the renderer
//! takes service demands (D = U / X), solves the closed queueing network they make by exact
//! MVA for the measured machine and for 2× and 4× the server's CPUs, fits the Universal
//! Scalability Law, and sets both against what was measured.

use crate::clients::Counts;
use crate::Options;

/// Client counts of the sweep: doubling, so that the curves are sampled evenly on the way to
/// saturation and beyond.
pub const CLIENTS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// The sweep of `--quick`.
pub const QUICK_CLIENTS: [usize; 5] = [1, 2, 4, 8, 16];

/// The experiment: the clients experiment's runs on the lab's target (a connection per
/// request unless `--keep-alive`), at its own client counts.
pub struct Model;

impl Counts for Model {
    const NAME: &'static str = "model";

    fn counts(options: &Options) -> Vec<usize> {
        if options.quick {
            QUICK_CLIENTS.to_vec()
        } else {
            CLIENTS.to_vec()
        }
    }
}
