//! `webscope load` (being built; see the open issue).

/// Flags of `webscope load`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`webscope load` is not built yet")
}
