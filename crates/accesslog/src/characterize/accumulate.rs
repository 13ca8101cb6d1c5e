//! The characterization as a stream: [`Characterizer::add`] for each entry, in time order as
//! [`crate::stream_logs`] delivers them (an entry out of order is counted as any other), then
//! [`Characterizer::finish`]. Memory follows what is distinct in the log (URLs, clients,
//! seconds), plus the raw values the [`Bounds`] allow.

use super::bins::Bins;
use super::clients::ClientCounter;
use super::coverage::{self, Coverage};
use super::daily::Visitors;
use super::hosts::HostTally;
use super::service::TimeSketch;
use super::sessions::{Sessions, SESSION_GAP_S};
use super::sketch::SizeSketch;
use super::traffic::MixCounter;
use super::urls::UrlCounter;
use super::visitors::{PerClient, VisitorThread};
use super::{
    burst, invariants, is_reference, popularity, redacted, unix, Characterization, Popularity,
    Series, SizeFigures, Sizes, MAX_BINS, MAX_SERIES_BINS,
};
use crate::line::Entry;
use crate::stream::ReadSummary;

/// How far each part keeps raw values before it estimates. The defaults hold about 100 MB
/// at most; tests set them tiny to force the estimators.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Transfer sizes kept one by one (8 bytes each); past it, the largest `top_sizes` and a
    /// log-binned histogram.
    pub sizes: usize,
    /// Largest transfer sizes kept once estimating: the Hill fit and its KS cut are exact
    /// while the cut lies among them.
    pub top_sizes: usize,
    /// Distinct clients counted one by one; past it, a sample chosen by hash.
    pub clients: usize,
    /// Reference instants kept for the inter-reference times (8 bytes each); past it, those
    /// of a sample of the URLs chosen by hash.
    pub references: usize,
    /// Request times kept one by one; past it, an HDR histogram.
    pub request_times: usize,
    /// Per-second bins for the burstiness figures; a longer log gets longer bins.
    pub arrival_bins: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            sizes: 1 << 21,
            top_sizes: 100_000,
            clients: 1 << 20,
            references: 1 << 22,
            request_times: 1 << 21,
            arrival_bins: MAX_BINS as usize,
        }
    }
}

/// What to characterize and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Count a URL by its path alone, its query strings folded into it.
    pub fold_query: bool,
    /// Seconds without a request that end a session ([`SESSION_GAP_S`]: 30 min).
    pub session_gap_s: i64,
    /// The bounds of the raw values kept.
    pub bounds: Bounds,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fold_query: false,
            session_gap_s: SESSION_GAP_S,
            bounds: Bounds::default(),
        }
    }
}

/// The characterization of a log being read.
#[derive(Debug)]
pub struct Characterizer {
    bounds: Bounds,
    requests: u64,
    span: Option<(i64, i64)>,
    seconds: Bins,
    minutes: Bins,
    hours: Bins,
    mix: MixCounter,
    transfers: SizeSketch,
    urls: UrlCounter,
    times: TimeSketch,
    /// Clients and sessions, on a thread of their own; taken by `finish`.
    visitors: Option<VisitorThread>,
}

impl Characterizer {
    /// Nothing counted yet.
    pub fn new(options: Options) -> Characterizer {
        let b = options.bounds;
        let series_bins = 4 * MAX_SERIES_BINS as usize;
        Characterizer {
            bounds: b,
            requests: 0,
            span: None,
            seconds: Bins::new(1, b.arrival_bins),
            minutes: Bins::new(60, series_bins),
            hours: Bins::new(3600, series_bins),
            mix: MixCounter::default(),
            transfers: SizeSketch::new(b.sizes, b.top_sizes),
            urls: UrlCounter::new(options.fold_query, b.references),
            times: TimeSketch::new(b.request_times),
            visitors: Some(VisitorThread::new(b.clients, options.session_gap_s)),
        }
    }

    /// Counts one entry.
    pub fn add(&mut self, e: &Entry) {
        let t = unix(e);
        self.requests += 1;
        self.span = Some(self.span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        self.seconds.add(t);
        self.minutes.add(t);
        self.hours.add(t);
        let reference = is_reference(e);
        self.mix.add(e, reference);
        if (200..300).contains(&e.status) {
            self.transfers.add(e.bytes);
        }
        self.urls.add(e, t);
        self.times.add(e);
        if let Some(visitors) = self.visitors.as_mut() {
            let agent = e.user_agent.as_deref().unwrap_or("");
            let path = e.has_request().then_some(&*e.path);
            visitors.add(&e.client, agent, (t, e.logged_day()), e.status, path);
        }
    }

    /// The figures, with what reading found (`read`).
    pub fn finish(mut self, read: &ReadSummary) -> Characterization {
        let per_client = match self.visitors.take() {
            Some(visitors) => visitors.finish(),
            None => PerClient {
                clients: ClientCounter::new(1),
                sessions: Sessions::default(),
                visitors: Visitors::default(),
            },
        };
        let mut c = self.figures_with_popularity(read, &per_client.clients);
        c.sessions = per_client.sessions;
        c.visitors = per_client.visitors;
        c
    }

    fn figures_with_popularity(
        &self,
        read: &ReadSummary,
        clients: &ClientCounter,
    ) -> Characterization {
        // The popularity figures (a sort of the URLs, the Zipf fit, the inter-reference
        // times) are two fifths of this end's time and need nothing else: they are drawn on a
        // second CPU while the rest are drawn here. Each figure is computed as it would be
        // alone, so the result is the same as on one thread.
        std::thread::scope(|scope| {
            let popularity = scope.spawn(|| {
                popularity::popularity(
                    self.urls.referenced(),
                    self.urls.reference_log(),
                    self.urls.sampled(),
                )
            });
            self.figures(read, clients, || {
                popularity
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        })
    }

    /// The figures, the popularity's taken from `popularity` once the others are drawn.
    fn figures(
        &self,
        read: &ReadSummary,
        clients: &ClientCounter,
        popularity: impl FnOnce() -> Popularity,
    ) -> Characterization {
        let (first, last) = self.span.unwrap_or((0, 0));
        let span_s = (last - first + 1).max(0) as u64;
        let file_sizes: Vec<u64> = self
            .urls
            .referenced()
            .iter()
            .filter_map(|r| r.size)
            .collect();
        let sizes = Sizes {
            transfer: self.transfers.figures(),
            transfer_exact: self.transfers.exact(),
            files: SizeFigures::new(file_sizes.iter().copied()),
            files_over_1k: SizeFigures::new(file_sizes.iter().copied().filter(|&b| b > 1024)),
        };
        let bin = span_s.div_ceil(self.bounds.arrival_bins as u64).max(1);
        let (bin, _, per_bin) = self.seconds.regrouped(bin, first, last);
        let arrivals = burst::burstiness(&per_bin, bin);
        let urls = self.urls.table();
        // From the clients' counts rather than per entry: a network's or domain's name is
        // made once per client, not once per request (exact while the clients are, from the
        // clients' sample past that).
        let hosts = clients
            .counted()
            .fold(HostTally::default(), |mut h, (client, n)| {
                h.add(client, n);
                h
            })
            .finish();
        let mut c = Characterization {
            requests: self.requests,
            bad_lines: read.bad_lines,
            long_lines: read.long_lines,
            bad_times: read.bad_times,
            bad_examples: read.bad_examples.iter().map(redacted).collect(),
            repaired_lines: read.repaired_lines,
            out_of_order: read.out_of_order,
            cut_short: read.cut_short.clone(),
            first_unix: first,
            last_unix: last,
            span_s,
            mean_rate: self.requests as f64 / span_s.max(1) as f64,
            per_minute: Series::from_bins(&self.minutes, 60, self.span),
            per_hour: Series::from_bins(&self.hours, 3600, self.span),
            mix: self.mix.mix(),
            urls,
            sizes,
            arrivals,
            arrivals_bin_s: bin,
            clients: clients.figures(),
            hosts,
            request_times: self.times.figures(),
            // Set by `finish`, from the per-client counters' own thread.
            sessions: Default::default(),
            visitors: Visitors::default(),
            popularity: popularity(),
            coverage: Coverage::default(),
            invariants: Vec::new(),
        };
        c.coverage = coverage::coverage(&c.per_minute, c.span_s);
        c.invariants = invariants::compare(&c);
        c
    }
}
