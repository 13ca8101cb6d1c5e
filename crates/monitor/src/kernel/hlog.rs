//! The kernel module's interval log, `kernel.hlog` in the output directory: at each sample,
//! that interval's accept-queue waits, lifetimes and times in TIME_WAIT of each port and the run-queue waits of
//! the watched threads, as HdrHistograms of nanoseconds in the interval log format that
//! `webscope load --hlog` writes (through its writer, [`webscope_load::Hlog`]), so that
//! HistogramLogAnalyzer, HistogramLogProcessor and the `hdrhistogram` crate read it. One tag
//! per figure and port ([`accept_wait_tag`], [`lifetime_tag`], [`lifetime_syn_tag`],
//! [`time_wait_tag`], [`RUNQ_TAG`]); no untagged
//! lines. The run's histogram of a figure is the sum of its intervals, and its count is the
//! run's count in `monitor.json` (`kernel.ports[].accept_wait.count`, ...).
//!
//! Every interval is written, empty ones too, so that a reader sees the whole time line; each
//! is flushed as it is written, so a run stopped by Ctrl-C keeps what it measured. Not for
//! the per-interval percentiles (kernel.csv has those) nor the run's figures (monitor.json).

/// The log's file name in the output directory.
pub const HLOG: &str = "kernel.hlog";

/// The tag of a port's accept-queue waits.
pub fn accept_wait_tag(port: u16) -> String {
    format!("accept_wait_{port}")
}

/// The tag of a port's connection lifetimes (ESTABLISHED to CLOSE).
pub fn lifetime_tag(port: u16) -> String {
    format!("lifetime_{port}")
}

/// The tag of a port's connection lifetimes from the SYN (see
/// `PortFigures::lifetime_from_syn`).
pub fn lifetime_syn_tag(port: u16) -> String {
    format!("lifetime_syn_{port}")
}

/// The tag of a port's times in TIME_WAIT (whole milliseconds, as nanoseconds), one per
/// TIME_WAIT socket that ended in the interval.
pub fn time_wait_tag(port: u16) -> String {
    format!("time_wait_{port}")
}

/// The tag of the watched threads' run-queue waits.
pub const RUNQ_TAG: &str = "runq";

#[cfg(feature = "kernel")]
pub(super) use writer::KernelLog;

#[cfg(feature = "kernel")]
mod writer {
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    use hdrhistogram::Histogram;
    use webscope_load::Hlog;

    /// An open `kernel.hlog`.
    pub(in crate::kernel) struct KernelLog {
        log: Hlog,
    }

    impl KernelLog {
        /// Creates the log at `path`; `start` is its base time. Err: one line saying why.
        pub(in crate::kernel) fn create(path: &Path, start: SystemTime) -> Result<Self, String> {
            let log = Hlog::with_header(
                path,
                start,
                &[
                    "webscope monitor kernel interval log",
                    "Nanoseconds; Tag=accept_wait_<port>: accept-queue waits, Tag=lifetime_<port>: connection lifetimes, Tag=lifetime_syn_<port>: the same from the SYN, Tag=time_wait_<port>: times in TIME_WAIT, Tag=runq: run-queue waits",
                ],
            )
            .map_err(|e| e.to_string())?;
            Ok(KernelLog { log })
        }

        /// Writes one interval's histograms, each with its tag, and flushes them.
        pub(in crate::kernel) fn write(
            &mut self,
            offset: Duration,
            length: Duration,
            figures: &[(String, Histogram<u64>)],
        ) -> Result<(), String> {
            for (tag, histogram) in figures {
                self.log
                    .write(histogram, offset, length, Some(tag))
                    .map_err(|e| e.to_string())?;
            }
            self.log.flush().map_err(|e| e.to_string())
        }
    }
}
