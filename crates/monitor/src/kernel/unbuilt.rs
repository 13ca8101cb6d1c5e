//! The kernel source of a build without the `kernel` feature: a type with no values, so
//! nothing can start one ([`Kernel::start`] says why in one line) and the monitor's code that
//! holds an `Option<Kernel>` is the same in both builds. [`crate::Config::check`] refuses an
//! explicit `kernel` request before it gets here.

use super::summary::KernelSummary;
use super::NOT_BUILT;
use crate::sources::{Ctx, Source};
use crate::table::GroupRows;

/// No kernel module in this build: there is no value of this type.
pub enum Kernel {}

impl Kernel {
    /// Always `Err`: [`NOT_BUILT`].
    pub fn start(_ports: &[u16], _pids: &[u32], _children: bool) -> Result<Kernel, String> {
        Err(NOT_BUILT.into())
    }

    /// Never called: there is no `Kernel`.
    pub fn unattached(&self) -> &[String] {
        match *self {}
    }

    /// Never called: there is no `Kernel`.
    pub fn log_to(&mut self, _path: &std::path::Path) -> Result<(), String> {
        match *self {}
    }

    /// Never called: there is no `Kernel`.
    pub fn summary(&mut self) -> KernelSummary {
        match *self {}
    }
}

impl Source for Kernel {
    fn name(&self) -> &'static str {
        match *self {}
    }

    fn sample(&mut self, _ctx: &mut Ctx<'_>, _out: &mut Vec<GroupRows>) -> Result<(), String> {
        match *self {}
    }
}
