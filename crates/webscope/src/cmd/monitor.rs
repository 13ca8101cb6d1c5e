//! `webscope monitor` (being built; see the open issue).

/// Flags of `webscope monitor`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`webscope monitor` is not built yet")
}
