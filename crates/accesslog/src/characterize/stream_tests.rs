//! The streaming characterization against the exact one, on generated logs that fit in
//! memory: Zipf URLs (some with query strings), lognormal-body and Pareto-tail sizes,
//! Poisson arrivals, many clients, logged request times.

use std::io::Write;

use webscope_workload::Rng;

use super::*;
use crate::{parse_line, read_logs, stream_logs, Format, ReadOptions, TimeUnit};

/// `lines` Combined lines with `$request_time` (milliseconds), `urls` URLs, `clients`
/// clients, at about 40 requests a second.
fn generated(lines: usize, urls: usize, clients: u64, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let weights: Vec<f64> = (1..=urls).map(|k| (k as f64).powf(-0.9)).collect();
    let total: f64 = weights.iter().sum();
    let mut acc = 0.0;
    let cdf: Vec<f64> = weights
        .iter()
        .map(|w| {
            acc += w / total;
            acc
        })
        .collect();
    let sizes: Vec<u64> = (0..urls)
        .map(|_| match rng.next_f64() < 0.8 {
            true => (8.5 + 1.3 * rng.normal()).exp() as u64 + 1,
            false => (20_000.0 * rng.next_open_f64().powf(-1.0 / 1.2)) as u64,
        })
        .collect();
    let mut out = String::new();
    let mut t = 1_700_000_000.0f64;
    for _ in 0..lines {
        t += rng.exponential() / 40.0;
        let u = rng.next_f64();
        let k = cdf.partition_point(|&c| c < u).min(urls - 1);
        let client = (clients as f64 * rng.next_f64().powi(2)) as u64;
        let query = if k % 11 == 0 { "?flav=rss20" } else { "" };
        let (status, bytes) = match rng.next_f64() {
            r if r < 0.03 => (404, 150),
            r if r < 0.09 => (304, 0),
            _ => (200, sizes[k]),
        };
        let secs = t as u64;
        let (d, h, m, s) = (
            secs / 86_400 % 28 + 1,
            secs / 3600 % 24,
            secs / 60 % 60,
            secs % 60,
        );
        let ms = (rng.exponential() * 20.0) as u64 + 1;
        out.push_str(&format!(
            "10.{}.{}.{} - - [{d:02}/Nov/2023:{h:02}:{m:02}:{s:02} +0000] \"GET /d{}/f{k}.html{query} HTTP/1.1\" {status} {bytes} \"-\" \"gen\" {}.{:03}\n",
            client >> 16, (client >> 8) & 255, client & 255, k % 50, ms / 1000, ms % 1000
        ));
    }
    out
}

const TIMED: Option<Format> = Some(Format::CombinedWithTime(TimeUnit::Seconds));

fn streamed(log: &std::path::Path, options: Options) -> Characterization {
    let mut c = Characterizer::new(options);
    let read = stream_logs(
        &[log.to_path_buf()],
        &ReadOptions::format(TIMED),
        &mut |e| c.add(&e),
        &mut |_| {},
    )
    .unwrap();
    c.finish(&read)
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

#[test]
fn streamed_under_the_bounds_equals_the_log_held_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let mut f = std::fs::File::create(&log).unwrap();
    f.write_all(generated(30_000, 2_000, 5_000, 1).as_bytes())
        .unwrap();
    drop(f);
    let held = read_logs(std::slice::from_ref(&log), TIMED).unwrap();
    for fold_query in [false, true] {
        let options = Options {
            fold_query,
            ..Options::default()
        };
        let exact = characterize_with(&held, options);
        assert_eq!(streamed(&log, options), exact);
        assert!(exact.sizes.transfer_exact && exact.clients.exact);
        assert_eq!(exact.popularity.inter_reference.sampled_share, 1.0);
        assert_eq!(exact.request_times.map(|t| t.exact), Some(true));
        // The feed's query makes resources of their own unless folded.
        let feed = exact
            .urls
            .by_requests
            .iter()
            .find(|r| r.url == "/d0/f0.html?flav=rss20");
        assert_eq!(
            feed.is_some(),
            !fold_query,
            "{:?}",
            exact.urls.by_requests[0]
        );
    }
}

#[test]
fn estimators_forced_by_tiny_bounds_agree_within_their_stated_errors() {
    let text = generated(120_000, 5_000, 40_000, 2);
    let entries: Vec<Entry> = text
        .lines()
        .map(|l| parse_line(l, TIMED).unwrap())
        .collect();
    let parsed = Parsed {
        entries,
        ..Parsed::default()
    };
    let exact = characterize_with(&parsed, Options::default());
    let tiny = Bounds {
        sizes: 5_000,
        top_sizes: 50_000,
        clients: 2_000,
        references: 30_000,
        request_times: 1_000,
        arrival_bins: 2_000,
    };
    let est = characterize_with(
        &parsed,
        Options {
            bounds: tiny,
            ..Options::default()
        },
    );
    let (x, e) = (&exact.sizes.transfer, &est.sizes.transfer);
    assert!(!est.sizes.transfer_exact && !est.clients.exact);
    // Counted, not estimated: requests, references, URLs, mix, totals, file sizes.
    assert_eq!(
        (est.requests, est.mix.clone(), est.urls.clone()),
        (exact.requests, exact.mix.clone(), exact.urls.clone())
    );
    assert_eq!((e.count, e.max), (x.count, x.max));
    assert!(close(e.mean, x.mean, 1e-6 * x.mean));
    assert_eq!(est.sizes.files, exact.sizes.files);
    assert_eq!(est.popularity.zipf, exact.popularity.zipf);
    // The median from a 1 % bin: within half its width.
    assert!(
        close(e.median, x.median, 0.005 * x.median),
        "{} {}",
        e.median,
        x.median
    );
    // The tail: the same cut whenever it lies among the largest kept, as here.
    let (xt, et) = (x.tail.unwrap(), e.tail.unwrap());
    assert!(xt.tail < tiny.top_sizes, "{xt:?}");
    assert_eq!(et, xt);
    // The Hill plot: the exact one's points up to the values kept.
    assert!(e.hill.len() > 100 && e.hill[..] == x.hill[..e.hill.len()]);
    // The body: each ln x off by at most half a bin's log-width, 0.005.
    let (xb, eb) = (x.body.unwrap(), e.body.unwrap());
    assert!(
        close(eb.mu, xb.mu, 0.005) && close(eb.sigma, xb.sigma, 0.005),
        "{eb:?} {xb:?}"
    );
    // Clients: 3 standard errors of a sample of at least 1 000 (1/√1000 each).
    let (xc, ec) = (exact.clients, est.clients);
    assert!(
        close(ec.distinct as f64 / xc.distinct as f64, 1.0, 0.095),
        "{ec:?} {xc:?}"
    );
    assert!(
        close(ec.median_requests, xc.median_requests, 1.0),
        "{ec:?} {xc:?}"
    );
    // With fewer kept than the cut needs, the best cut among them: α within 0.1 (a Pareto
    // tail's Hill plot is flat to within a few α/√k, 0.015 at k = 10 000).
    let few = Bounds {
        top_sizes: xt.tail / 3,
        ..tiny
    };
    let options = Options {
        bounds: few,
        ..Options::default()
    };
    let short = characterize_with(&parsed, options)
        .sizes
        .transfer
        .tail
        .unwrap();
    assert!(
        short.tail < few.top_sizes && close(short.alpha, xt.alpha, 0.1),
        "{short:?} {xt:?}"
    );
    // Request times: an HDR histogram at three significant digits.
    let (xr, er) = (exact.request_times.unwrap(), est.request_times.unwrap());
    assert!(!er.exact && er.count == xr.count && er.max_ms == xr.max_ms);
    for (a, b) in [
        (er.p50_ms, xr.p50_ms),
        (er.p90_ms, xr.p90_ms),
        (er.p99_ms, xr.p99_ms),
    ] {
        assert!(close(a, b, 0.001 * b), "{er:?} {xr:?}");
    }
    // Arrivals in 2 s bins instead of 1 s: the IDC at the windows both have within 10 %,
    // Hurst within 0.05 (its regression then lacks the 1 s point).
    assert_eq!(est.arrivals_bin_s, 2);
    for w in &est.arrivals.idc {
        let Some(xw) = exact.arrivals.idc.iter().find(|x| x.window_s == w.window_s) else {
            continue;
        };
        assert!(close(w.value, xw.value, 0.1 * xw.value), "{w:?} {xw:?}");
    }
    let (xh, eh) = (exact.arrivals.hurst.unwrap(), est.arrivals.hurst.unwrap());
    assert!(close(eh, xh, 0.05), "{eh} {xh}");
    // Inter-reference times of a hash sample of the URLs: medians of CV and lag-1 within 0.1.
    let (xi, ei) = (
        exact.popularity.inter_reference,
        est.popularity.inter_reference,
    );
    assert!(ei.sampled_share < 1.0 && ei.urls > 10, "{ei:?}");
    assert!(
        close(ei.median_cv.unwrap(), xi.median_cv.unwrap(), 0.1),
        "{ei:?} {xi:?}"
    );
    assert!(
        close(ei.median_lag1.unwrap(), xi.median_lag1.unwrap(), 0.1),
        "{ei:?} {xi:?}"
    );
}
