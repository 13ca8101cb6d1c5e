//! What `webscope load` does beside the load itself: the flags that are this process's own
//! (whether the load comes from flags or `--config`) and what the run writes and shows.

use std::path::PathBuf;
use std::time::Duration;

use webscope_load::slo::Slo;
use webscope_load::Config;

use super::Flags;

/// The flags that are this process's own, whether the load comes from flags or `--config`.
pub(super) struct Own {
    threshold: Option<Slo>,
    json: Option<PathBuf>,
    hlog: Option<PathBuf>,
    samples: Option<PathBuf>,
    segment: Option<(usize, usize)>,
    start_at: Option<std::time::SystemTime>,
    emit: bool,
    quiet: bool,
    live: Option<String>,
    live_linger: Duration,
}

impl Own {
    /// Takes this process's own flags out of `flags`.
    pub(super) fn take(flags: &mut Flags) -> Own {
        Own {
            threshold: flags.threshold.take(),
            json: flags.json.take(),
            hlog: flags.hlog.take(),
            samples: flags.samples.take(),
            segment: flags.segment.take(),
            start_at: flags.start_at.take(),
            emit: flags.emit,
            quiet: flags.quiet,
            live: flags.live.take(),
            live_linger: flags.live_linger,
        }
    }

    /// Sets them on `config`, checks it, and says what `run` does beside it.
    pub(super) fn apply(
        self,
        mut config: Config,
        read: Option<String>,
    ) -> anyhow::Result<(Config, Output)> {
        config.hlog = self.hlog;
        config.samples = self.samples;
        config.segment = self.segment;
        config.start_at = self.start_at;
        let mut temporary_hlog = None;
        if self.emit && config.hlog.is_none() {
            let path =
                std::env::temp_dir().join(format!("webscope-load-{}.hlog", std::process::id()));
            config.hlog = Some(path.clone());
            temporary_hlog = Some(path);
        }
        config.check()?;
        let output = Output {
            threshold: self.threshold,
            json: self.json,
            emit: self.emit,
            temporary_hlog,
            live_line: !self.quiet,
            live_page: self.live,
            linger: self.live_linger,
            read,
        };
        Ok((config, output))
    }
}

/// What `run` needs besides the load's configuration.
pub(super) struct Output {
    pub(super) threshold: Option<Slo>,
    pub(super) json: Option<PathBuf>,
    pub(super) emit: bool,
    pub(super) live_line: bool,
    pub(super) live_page: Option<String>,
    pub(super) linger: Duration,
    /// `--emit` without `--hlog`: the log written for it, removed after.
    pub(super) temporary_hlog: Option<PathBuf>,
    /// A replay or a log's sessions: what was read and what was left out, said before the
    /// run.
    pub(super) read: Option<String>,
}
