//! `webscope load --config`: a whole `webscope_load::Config` as the lab's segments and
//! `webscope distribute`'s pods are given it, instead of the flags that shape a load. Only the
//! process's own flags go on top of it (the `Own` of the parent module). Also what
//! `webscope distribute` makes of load options, which may name such a config.

use std::path::Path;

use anyhow::Context;
use webscope_load::Config;

/// The flags whose settings a config holds: given with `--config`, they would fight it (clap
/// refuses them; a test checks that every flag is here or is the process's own).
pub(super) const SHAPING: [&str; 44] = [
    "url",
    "expect_status",
    "requests",
    "replay",
    "speed",
    "looped",
    "log_format",
    "method",
    "body",
    "groups",
    "fileset",
    "base",
    "connections",
    "duration",
    "threads",
    "rate",
    "arrivals",
    "max_connections",
    "close",
    "think_time",
    "backoff_503",
    "timeout",
    "interval",
    "http2",
    "http3",
    "zero_rtt",
    "max_streams",
    "busy_poll",
    "io",
    "insecure",
    "cacert",
    "no_tls_resume",
    "tls_resume",
    "headers",
    "seed",
    "users",
    "views",
    "objects",
    "think",
    "user_connections",
    "ramp_up",
    "sessions",
    "session_gap",
    "think_scale",
];

/// The config of `--config SOURCE` (a file, or JSON text when it starts with `{`), checked
/// as it is read; its server's name resolved here.
pub(super) fn read(source: &str) -> anyhow::Result<Config> {
    let (text, what) = text_of(source)?;
    let mut config = Config::from_json(&text)
        .map_err(|why| anyhow::anyhow!("{what} is not a webscope load config: {why}"))?;
    config
        .target
        .resolve_again()
        .map_err(|why| anyhow::anyhow!("{what}: {why}"))?;
    Ok(config)
}

/// The load options a Job's pods are given, as `webscope distribute` writes them.
pub struct ForPods {
    /// The options to write into the Job: as given, but a `--config FILE` replaced by the
    /// file's JSON (a pod has no copy of the file).
    pub load: Vec<String>,
    /// The local files they name (a pod has them only if its image carries them).
    pub local: Vec<String>,
}

/// What `webscope distribute` checks of the load options it writes into a Job before writing
/// it: that they parse as `webscope load`'s own (else clap's one-line reason) and a config
/// they name reads as one.
pub fn check_for_pods(load: &[String]) -> Result<ForPods, String> {
    let argv = std::iter::once("load".to_string()).chain(load.iter().cloned());
    let cli = <super::Cli as clap::Parser>::try_parse_from(argv).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or("").trim();
        first.strip_prefix("error: ").unwrap_or(first).to_string()
    })?;
    let flags = cli.args.flags;
    let mut local = Vec::new();
    if let Some(dir) = &flags.fileset {
        local.push(format!("--fileset {}", dir.display()));
    }
    if let Some(file) = &flags.requests {
        local.push(format!("--requests {}", file.display()));
    }
    for log in &flags.replay {
        local.push(format!("--replay {}", log.display()));
    }
    if let Some(file) = flags.body.as_deref().and_then(|b| b.strip_prefix('@')) {
        local.push(format!("--body @{file}"));
    }
    let mut load = load.to_vec();
    if let Some(source) = &flags.config {
        let (config, json) = for_pods(source).map_err(|e| format!("{e:#}"))?;
        if let Some(cacert) = &config.tls.cacert {
            local.push(format!("the config's cacert {}", cacert.display()));
        }
        load = replace_source(&load, &json);
    }
    Ok(ForPods { load, local })
}

/// The config of `--config SOURCE` for a Job's pods, checked here but not resolved (a
/// cluster's names may mean nothing on this machine), and its JSON to give them.
fn for_pods(source: &str) -> anyhow::Result<(Config, String)> {
    let (text, what) = text_of(source)?;
    let config = Config::from_json(&text)
        .map_err(|why| anyhow::anyhow!("{what} is not a webscope load config: {why}"))?;
    // On one line: it goes into the Job as an argument.
    let json = serde_json::to_string(&config).context("cannot write the config as JSON")?;
    Ok((config, json))
}

/// `load` with its `--config SOURCE` (or `--config=SOURCE`) given `json` instead, as a
/// container's argument: `$` written `$$`, since Kubernetes expands `$(NAME)` in a container's
/// arguments (and reads `$$` as `$`), and the JSON (a header, a path) may hold one.
fn replace_source(load: &[String], json: &str) -> Vec<String> {
    let json = json.replace('$', "$$");
    let mut out = Vec::with_capacity(load.len());
    let mut args = load.iter();
    while let Some(arg) = args.next() {
        if arg == "--config" {
            args.next();
        } else if !arg.starts_with("--config=") {
            out.push(arg.clone());
            continue;
        }
        out.extend(["--config".to_string(), json.clone()]);
    }
    out
}

/// The most bytes a `--config` file may hold: a config is a few KiB, and one that carries a
/// log's sessions (whose scripts are kept within `webscope_accesslog::SCRIPT_BUDGET`, 32 MiB)
/// a few tens of MiB; `/dev/zero` was read to 4.1 GB before anything said no (issue 51, item
/// 7).
pub(super) const MAX_CONFIG: u64 = 64 << 20;

/// The JSON of `--config SOURCE` and how to name it in a message. A file must be a regular
/// file of at most [`MAX_CONFIG`] bytes: a device, a FIFO or a directory is refused before it
/// is read, and the reading stops past the cap whatever the file claims.
fn text_of(source: &str) -> anyhow::Result<(String, String)> {
    use std::io::Read;
    if source.trim_start().starts_with('{') {
        return Ok((source.to_string(), "--config's JSON".to_string()));
    }
    let not_regular = || {
        anyhow::anyhow!("--config {source} is not a regular file: give a config written as a file, or the JSON itself")
    };
    // Looked at before it is opened: opening a FIFO waits for a writer.
    let cannot = || format!("--config {source}: cannot read it");
    if !std::fs::metadata(source).with_context(cannot)?.is_file() {
        return Err(not_regular());
    }
    let file = std::fs::File::open(Path::new(source)).with_context(cannot)?;
    let meta = file.metadata().with_context(cannot)?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let too_big = || {
        anyhow::anyhow!(
            "--config {source} is larger than a config may be ({}): is it the right file?",
            webscope_report::human::bytes(MAX_CONFIG as f64)
        )
    };
    if meta.len() > MAX_CONFIG {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG + 1)
        .read_to_end(&mut bytes)
        .with_context(cannot)?;
    if bytes.len() as u64 > MAX_CONFIG {
        return Err(too_big());
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("--config {source} is not text: give a JSON config"))?;
    Ok((text, format!("--config {source}")))
}

#[cfg(test)]
#[path = "whole_tests.rs"]
mod tests;
