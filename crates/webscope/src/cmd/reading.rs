//! Reading logs under Ctrl-C and SIGTERM (`characterize`, `fileset like`): the signal stops
//! the reading at the next entry or batch of lines ([`webscope_accesslog::stream_logs_until`]),
//! the command summarises what was read, writes nothing, and exits 130.
//!
//! A read blocked for good (a pipe whose writer stopped without closing it) never reaches the
//! next batch: a watchdog then ends the process a little later with a line saying why. It
//! stands down once the reading has returned, so that it can never cut a file being written
//! (the commands write only after reading, and then atomically).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Exit, EXIT_INTERRUPTED};

/// How long a raised signal waits for the reading to stop before the watchdog ends the run.
const GRACE: Duration = Duration::from_secs(3);

/// Logs being read, stoppable by a signal.
pub struct Reading {
    /// Raised by SIGINT or SIGTERM.
    pub stop: Arc<AtomicBool>,
    /// The reading has returned: the watchdog stands down.
    done: Arc<AtomicBool>,
    /// Lines read so far, for the watchdog's line.
    lines: Arc<AtomicU64>,
}

impl Reading {
    /// Handles SIGINT and SIGTERM from now on, and starts the watchdog.
    pub fn start(command: &'static str) -> anyhow::Result<Reading> {
        let stop = crate::signals::interrupt_flag()?;
        let done = Arc::new(AtomicBool::new(false));
        let lines = Arc::new(AtomicU64::new(0));
        let (raised, finished, read) = (stop.clone(), done.clone(), lines.clone());
        std::thread::Builder::new()
            .name("interrupt-watchdog".into())
            .spawn(move || watch(command, &raised, &finished, &read))?;
        Ok(Reading { stop, done, lines })
    }

    /// Notes the lines read so far (the progress callback's count).
    pub fn progress(&self, lines: u64) {
        self.lines.store(lines, Ordering::Relaxed);
    }

    /// The reading has returned: the watchdog stands down. Whether a signal stopped it.
    pub fn finished(&self) -> bool {
        self.done.store(true, Ordering::Relaxed);
        self.stop.load(Ordering::Relaxed)
    }

    /// The error that ends an interrupted command: `said` (what was read, and that nothing
    /// was written) on stderr, exit 130.
    pub fn interrupted(said: String) -> anyhow::Error {
        anyhow::Error::new(Exit {
            code: EXIT_INTERRUPTED,
            message: said,
        })
    }
}

fn watch(command: &str, raised: &AtomicBool, finished: &AtomicBool, lines: &AtomicU64) {
    let tick = Duration::from_millis(50);
    while !raised.load(Ordering::Relaxed) {
        if finished.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(tick);
    }
    let since = Instant::now();
    while since.elapsed() < GRACE {
        if finished.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(tick);
    }
    eprintln!(
        "webscope: {command} interrupted; the input did not stop within {} s (a pipe whose writer neither writes nor closes?), after {} lines: nothing written",
        GRACE.as_secs(),
        lines.load(Ordering::Relaxed)
    );
    std::process::exit(EXIT_INTERRUPTED);
}
