//! `webscope serve` (being built; see the open issue).

/// Flags of `webscope serve`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`webscope serve` is not built yet")
}
