//! `webscope fileset` (being built; see the open issue).

/// Flags of `webscope fileset`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`webscope fileset` is not built yet")
}
