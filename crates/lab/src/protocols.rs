//! The `protocols` experiment: what the protocols of 2026 cost the server next to the HTTP/1.1
//! of the papers. The same SPECweb96 mix and clients over plain HTTP/1.1, HTTPS, HTTP/2
//! (over TLS) and HTTP/3 (over QUIC, the same server's UDP port), each with connections kept alive, and the first two also with a connection per
//! request (where HTTPS pays a handshake for each). Each row is its own embedded server, pinned
//! as the lab pins it; the figure that matters is the server's CPU time per request, and in
//! close mode the handshake's share of the client's time.

use std::path::Path;
use std::time::Duration;

use webscope_load::{Config, Mode, Target as LoadTarget};

use crate::measure::measure;
use crate::runner::{Ctx, Points, Run, Sweep};
use crate::target::{Secure, Target};
use crate::Options;
use webscope_record::RunRecord;

/// Closed-loop clients of every row: enough to keep one server core busy.
const CLIENTS: usize = 20;

/// One row: its label, whether over TLS, HTTP/2, HTTP/3 (QUIC), a connection per request.
pub struct Row {
    /// The row's name on the page (`HTTP/1.1`, `HTTPS close`, ...).
    pub label: &'static str,
    /// Over TLS.
    pub tls: bool,
    /// HTTP/2.
    pub http2: bool,
    /// HTTP/3 over QUIC.
    pub http3: bool,
    /// A connection per request (otherwise kept alive).
    pub close: bool,
}

/// The rows, in the order they run and are shown.
pub const ROWS: [Row; 6] = [
    Row {
        label: "HTTP/1.1",
        tls: false,
        http2: false,
        http3: false,
        close: false,
    },
    Row {
        label: "HTTP/1.1 close",
        tls: false,
        http2: false,
        http3: false,
        close: true,
    },
    Row {
        label: "HTTPS",
        tls: true,
        http2: false,
        http3: false,
        close: false,
    },
    Row {
        label: "HTTPS close",
        tls: true,
        http2: false,
        http3: false,
        close: true,
    },
    Row {
        label: "HTTP/2",
        tls: true,
        http2: true,
        http3: false,
        close: false,
    },
    Row {
        label: "HTTP/3",
        tls: true,
        http2: false,
        http3: true,
        close: false,
    },
];

/// The experiment: the rows, each its own embedded server, with the lab's certificate; with
/// `--loss`, the loss experiment's points instead (`loss/experiment.rs`), numbered after
/// the rows.
pub struct Protocols {
    secure: Secure,
    loss: Option<(crate::loss::Settings, Secure)>,
}

impl Sweep for Protocols {
    const NAME: &'static str = "protocols";
    const FACTOR: &'static str = "protocol";
    const NEEDS_EMBEDDED: bool = true;
    /// The row's index in [`ROWS`].
    type Point = usize;

    fn points(options: &Options) -> Points<usize> {
        match &options.loss {
            Some(loss) => Points::Fixed((0..loss_points(loss)).map(|k| ROWS.len() + k).collect()),
            None => Points::Fixed((0..ROWS.len()).collect()),
        }
    }

    fn start(ctx: &Ctx<'_>) -> anyhow::Result<Protocols> {
        let loss = match &ctx.options.loss {
            Some(settings) => Some((
                settings.clone(),
                crate::loss::experiment::secure(&ctx.options.work)?,
            )),
            None => None,
        };
        Ok(Protocols {
            secure: Secure::make(&ctx.options.work, false)?,
            loss,
        })
    }

    fn name(&self, row: &usize) -> String {
        format!("row-{row}")
    }

    fn label(&self, run: &Run<'_, usize>) -> String {
        match (&self.loss, run.point.checked_sub(ROWS.len())) {
            (Some((loss, _)), Some(k)) => crate::loss::experiment::label(loss, k, run.round),
            _ => ROWS[*run.point].label.to_string(),
        }
    }

    fn measure(&mut self, run: &Run<'_, usize>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        match (&self.loss, run.point.checked_sub(ROWS.len())) {
            (Some((loss, secure)), Some(k)) => {
                crate::loss::experiment::run(run.dir, ctx, loss, (k, run.round), secure)
            }
            _ => one_run(run.dir, ctx, *run.point, &self.secure),
        }
    }
}

fn loss_points(loss: &crate::loss::Settings) -> usize {
    crate::loss::experiment::count(loss)
}

fn one_run(
    run_dir: &Path,
    ctx: &Ctx<'_>,
    index: usize,
    secure: &Secure,
) -> anyhow::Result<RunRecord> {
    let row = &ROWS[index];
    let secure = Secure {
        http2: row.http2,
        http3: row.http3,
        ..secure.clone()
    };
    let mut target = Target::embedded_over(
        ctx.exe,
        ctx.fileset,
        1,
        ctx.server_cpu,
        &[],
        row.tls.then_some(&secure),
    )?;
    let mut config = Config::new(LoadTarget::fileset(ctx.fileset, &target.base_url)?);
    config.connections = CLIENTS;
    config.threads = 1;
    config.duration = ctx.duration;
    config.mode = if row.close {
        Mode::Close
    } else {
        Mode::KeepAlive
    };
    config.timeout = Duration::from_secs(10);
    let measured = measure(run_dir, config, &target, ctx.interrupt, ctx.bar, row.label);
    target.stop();
    Ok(RunRecord::new(
        index as f64,
        format!(
            "{}: SPECweb96 mix, {CLIENTS} clients, {}{}",
            row.label,
            if row.close {
                "a connection per request"
            } else {
                "keep-alive"
            },
            match (row.tls, row.http2, row.http3) {
                (true, true, _) => ", HTTP/2 over TLS (ALPN h2), one stream per connection",
                (true, _, true) => ", HTTP/3 over QUIC (ALPN h3), one stream per connection",
                (true, false, false) => ", TLS 1.3 (rustls), sessions resumed",
                _ => "",
            }
        ),
        measured?,
    ))
}
