//! One run of the loss experiment: a page of [`OBJECTS`] objects loaded over and over by
//! [`USERS`] users over HTTP/2 or HTTP/3, across the relay's link at one loss rate and the
//! lab's `--rtt`. The embedded server runs in the link's server namespace (pinned as the lab
//! pins it), the generator's threads in the client namespace (a thread that entered it runs
//! the measurement, and the generator's threads are its children). Each protocol gets a link
//! of its own, so that nothing of one run's queue is left for the next.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use webscope_load::users::{Dist, SessionModel};
use webscope_load::users::{Sessions, Users, BROWSER_CONNECTIONS};
use webscope_load::{Config, Mode, Target as LoadTarget};

use super::Settings;
use crate::measure::measure;
use crate::runner::Ctx;
use crate::target::{Secure, Target};
use webscope_lossylink::{Faults, Link, SERVER_ADDR};
use webscope_record::RunRecord;

/// Objects on each page (after the page itself), as in the comparisons the page cites.
pub const OBJECTS: u32 = 20;
/// Users loading pages at once, each one connection.
pub const USERS: usize = 4;
/// A user's think time between page views: short, so that the run gathers page loads.
const THINK: Duration = Duration::from_millis(50);

/// The server's TCP congestion control (`serve --tcp-congestion`), that of quinn's (its
/// `TransportConfig`'s default, which neither the server nor the generator changes): a
/// comparison of two transports' loss recovery, not of two congestion controllers. Left to
/// the host, TCP here ran BBR (this machine's default, which new namespaces inherit; a
/// namespace cannot make Cubic its default, as the kernel restricts that to the host's own
/// namespace unless the host allows it, so the server sets it on its listener): BBR does not
/// cut its window for random loss, Cubic does at each loss, and at 1 % loss HTTP/3 loaded
/// pages 1.8 times as slowly as HTTP/2 at the median (the server's quinn cwnd 8-17 packets at
/// the end, 71-81 congestion events per connection, against TCP's 15-170 segments).
pub const TCP_CONGESTION: &str = "cubic";

/// The two protocols compared.
pub const PROTOCOLS: [&str; 2] = ["HTTP/2", "HTTP/3"];

/// Point `k` of the sweep in round `round` of `--repeat` (from 1): (the loss rate's index,
/// the protocol's index). The two protocols of a loss rate run back to back, in an order
/// that alternates from one loss rate to the next and from one round to the next: what the
/// machine does between two runs (a neighbour's build, a drift) then weighs on each
/// protocol as often first as second, and a round's two runs are a pair taken together.
pub fn point(k: usize, round: usize) -> (usize, usize) {
    let (rate, slot) = (k / PROTOCOLS.len(), k % PROTOCOLS.len());
    let flipped = (rate + round.saturating_sub(1)) % 2;
    (rate, slot ^ flipped)
}

/// Points of the sweep.
pub fn count(settings: &Settings) -> usize {
    settings.rates.len() * PROTOCOLS.len()
}

/// A run's label: "HTTP/3 at 1 % loss".
pub fn label(settings: &Settings, k: usize, round: usize) -> String {
    let (rate, protocol) = point(k, round);
    format!(
        "{} at {} % loss",
        PROTOCOLS[protocol],
        settings.rates[rate] * 100.0
    )
}

/// A certificate for the link's server address (the lab's own names 127.0.0.1 only).
pub fn secure(work: &Path) -> anyhow::Result<Secure> {
    use anyhow::Context;
    let dir = work.join("tls-loss");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let made = rcgen::generate_simple_self_signed(vec![SERVER_ADDR.into()])
        .context("cannot make the loss experiment's certificate")?;
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    webscope_sys::write_file(&cert, made.cert.pem().as_bytes())?;
    webscope_sys::write_file(&key, made.key_pair.serialize_pem().as_bytes())?;
    Ok(Secure {
        cert,
        key,
        http2: false,
        http3: false,
    })
}

/// Runs point `k` of round `round` into `run_dir`. Its record's x is the loss rate in per
/// cent; the protocol is the load report's (and the first word of its description).
pub fn run(
    run_dir: &Path,
    ctx: &Ctx<'_>,
    settings: &Settings,
    (k, round): (usize, usize),
    secure: &Secure,
) -> anyhow::Result<RunRecord> {
    let (rate, protocol) = point(k, round);
    let loss = settings.rates[rate];
    let faults = Faults {
        delay: settings.rtt / 2,
        loss,
    };
    // A seed of its own per run: a round's repeat draws other losses, as a new run would.
    let link = Link::new(faults, 0x1055 + (round * 1000 + k) as u64)?;
    let secure = Secure {
        http2: protocol == 0,
        http3: protocol == 1,
        ..secure.clone()
    };
    let (exe, fileset, cpu) = (
        ctx.exe.to_path_buf(),
        ctx.fileset.to_path_buf(),
        ctx.server_cpu,
    );
    let serving = secure.clone();
    let mut target = link.server.run(move || {
        let extra = ["--tcp-congestion".to_string(), TCP_CONGESTION.to_string()];
        Target::embedded_at(SERVER_ADDR, &exe, &fileset, 1, cpu, &extra, Some(&serving))
    })?;
    let mut config = Config::new(LoadTarget::fileset(ctx.fileset, &target.base_url)?);
    config.threads = 1;
    config.connections = USERS;
    config.duration = ctx.duration;
    config.mode = Mode::KeepAlive;
    // A lost SYN or handshake packet waits for TCP's 1-s initial timeout: the run's timeout
    // must outlast a few of them.
    config.timeout = Duration::from_secs(10);
    let model = SessionModel {
        views: Dist::Geometric { mean: 1e6 },
        objects: Dist::Constant {
            value: f64::from(OBJECTS),
        },
        think: Dist::Constant {
            value: THINK.as_secs_f64(),
        },
        page: None,
    };
    config.users = Some(Arc::new(Users {
        count: USERS,
        connections: BROWSER_CONNECTIONS,
        sessions: Sessions::Model(model),
        ramp_up: Duration::ZERO,
    }));
    let label = label(settings, k, round);
    let measured = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                link.client.enter_here()?;
                measure(run_dir, config, &target, ctx.interrupt, ctx.bar, &label)
            })
            .join()
            .map_err(|_| anyhow::anyhow!("the measuring thread panicked"))?
    });
    target.stop();
    // What the link did, each way: that both protocols met the loss asked for, per packet.
    webscope_sys::write_file(
        &run_dir.join("link.txt"),
        (link.counts.summary() + "\n").as_bytes(),
    )?;
    let record = RunRecord::new(
        loss * 100.0,
        format!(
            "{}: {USERS} users, a page and {OBJECTS} objects of the SPECweb96 mix each view, {} ms think, over a link of {} ms RTT and {} % random loss each way (user-space relay between network namespaces), congestion control {TCP_CONGESTION} for TCP and QUIC",
            PROTOCOLS[protocol],
            THINK.as_millis(),
            settings.rtt.as_millis(),
            loss * 100.0
        ),
        measured?,
    );
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_loss_rate_runs_both_protocols_first_as_often() {
        // Two loss rates, two rounds: who goes first at each (rate, round).
        let first = |rate: usize, round: usize| point(rate * 2, round).1;
        assert_eq!([first(0, 1), first(1, 1)], [0, 1]);
        assert_eq!([first(0, 2), first(1, 2)], [1, 0]);
        for round in 1..=3 {
            for rate in 0..3 {
                let pair = [point(rate * 2, round), point(rate * 2 + 1, round)];
                assert_eq!(pair.map(|p| p.0), [rate, rate]);
                assert_eq!(pair[0].1 + pair[1].1, 1, "both protocols at rate {rate}");
            }
        }
    }
}
