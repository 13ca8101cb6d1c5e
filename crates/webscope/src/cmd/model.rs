//! `webscope model` (being built; see the open issue).

/// Flags of `webscope model`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`webscope model` is not built yet")
}
