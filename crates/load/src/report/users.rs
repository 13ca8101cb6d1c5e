//! `--users`: what the report says of the users besides the requests — page views and their
//! page loads, the think times kept, the users active — in total and per interval.

use serde::{Deserialize, Serialize};

use super::{IntervalReport, Latency, Report};
use crate::config::Config;
use crate::recorder::UserStats;
use crate::users::Sessions;

/// A users run's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UsersReport {
    /// The users (N).
    pub users: usize,
    /// Connections each may open.
    pub connections_per_user: usize,
    /// Over HTTP/2: the streams each user has out at once at most, on its one connection
    /// (None over HTTP/1.1, where each request has a connection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams_per_user: Option<usize>,
    /// How the sessions were made.
    pub sessions_from: String,
    /// How long the users think, in words (said beside the number of users).
    pub thinking: String,
    /// Sessions begun.
    pub sessions: u64,
    /// Page views ended, and of those the ones with a request unanswered or answered other
    /// than expected.
    pub page_views: u64,
    /// Of those, the ones with a request unanswered or answered other than expected.
    pub page_view_errors: u64,
    /// Page views ended per second (the interactive system's throughput X).
    pub page_views_per_s: f64,
    /// Page load (from the page's request to its last object's answer), of the page views
    /// without errors.
    pub page_load_us: Latency,
    /// Their 95th percentile (the usual page objective's).
    pub page_load_p95_us: f64,
    /// The mean think time configured (MVA's Z), seconds.
    pub think_configured_s: f64,
    /// The think times kept, as measured (from a page view's end to the next one's start).
    pub think_us: Latency,
    /// The Kolmogorov-Smirnov distance between the think times kept and the model's
    /// distribution: small when the users thought as told whatever the server did. None for
    /// a log's sessions: their think times are whole seconds (CLF's resolution), a step
    /// function that a timer's half millisecond either side puts at distance 1 from any
    /// sample, and which says nothing; None for a constant think time, for the same reason.
    pub think_ks_distance: Option<f64>,
    /// The interactive response time law's R = N/X − Z, seconds, with the measured X and
    /// the mean think time kept (Z as the run had it: a sample's mean is not the
    /// configured one), to set against the measured mean page load. They agree when every
    /// user was in a page view or thinking for the whole run; the ramp-up, during which
    /// users wait to begin, and the run's end, which cuts page views and thinks short,
    /// pull them apart, the more so the shorter the run.
    pub law_response_s: f64,
    /// Page views a user went through in the run, on average (X·T/N): under
    /// `LAW_CYCLES`, the ramp-up and the run's end weigh too much for the law to hold,
    /// and the summary leaves it out, saying why.
    pub law_cycles: f64,
    /// A segment's whole page-load and think-time histograms, so that `webscope merge` adds
    /// them exactly (issue 52: merge dropped the users figures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histograms: Option<UserHistograms>,
}

/// A segment's users histograms, V2-compressed and base64-encoded as its classes' are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserHistograms {
    /// Page loads, ns.
    pub page_load: String,
    /// Think times kept, ns.
    pub think: String,
}

/// Page views per user below which the summary leaves R = N/X − Z out (issue 52: "R = N/X −
/// Z 2.15 s" beside a mean page load of 906 µs, users thinking 11 s in a 60-s run).
pub const LAW_CYCLES: f64 = 10.0;

/// A users run's interval figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IntervalUsers {
    /// Users begun by the interval's end.
    pub active: usize,
    /// Page views ended in the interval, and per second.
    pub page_views: u64,
    /// Page views ended per second.
    pub page_views_per_s: f64,
    /// Their page loads, and the 95th percentile.
    pub page_load_us: Latency,
    /// Their 95th percentile.
    pub page_load_p95_us: f64,
}

/// Fills the report's users figures from the run's totals (with its histograms, for a
/// segment).
pub(crate) fn fill(config: &Config, report: &mut Report, stats: &UserStats) {
    let Some(users) = &config.users else {
        return;
    };
    let mut figures = UsersReport {
        users: users.count,
        // Over HTTP/2 and HTTP/3 a user's connections are the streams of its one connection.
        connections_per_user: if config.http2.is_some() || config.http3.is_some() {
            1
        } else {
            users.connections
        },
        streams_per_user: (config.http2.is_some() || config.http3.is_some())
            .then_some(users.connections),
        sessions_from: users.describe(),
        thinking: users.thinking(),
        think_configured_s: users.mean_think_s(),
        think_ks_distance: match &users.sessions {
            // A constant think time's CDF is a step, at distance 1 from any sample a timer
            // kept within half a millisecond of it: the distance would say nothing.
            Sessions::Model(model)
                if matches!(model.think, crate::users::Dist::Constant { .. }) =>
            {
                None
            }
            Sessions::Model(model) => {
                let think = model.think;
                Some(ks_distance(&stats.think, &|x| think.cdf(x)))
            }
            Sessions::Logged(_) => None,
        },
        ..UsersReport::default()
    };
    measured(&mut figures, stats, report.duration_s);
    if config.segment.is_some() {
        let mut serializer = hdrhistogram::serialization::V2DeflateSerializer::new();
        figures.histograms = Some(UserHistograms {
            page_load: super::histograms::encode_one(&mut serializer, &stats.page_load),
            think: super::histograms::encode_one(&mut serializer, &stats.think),
        });
    }
    report.users = Some(figures);
}

/// The figures measured from `stats` over `seconds`: what a single run and a merge of
/// segments compute alike.
fn measured(r: &mut UsersReport, stats: &UserStats, seconds: f64) {
    let x = stats.views as f64 / seconds.max(1e-9);
    let z = Latency::of(&stats.think).mean / 1e6;
    r.sessions = stats.sessions;
    r.page_views = stats.views;
    r.page_view_errors = stats.view_errors;
    r.page_views_per_s = x;
    r.page_load_us = Latency::of(&stats.page_load);
    r.page_load_p95_us = p95(&stats.page_load);
    r.think_us = Latency::of(&stats.think);
    r.law_response_s = if x > 0.0 { r.users as f64 / x - z } else { 0.0 };
    r.law_cycles = stats.views as f64 / r.users.max(1) as f64;
}

/// The users figures of a run merged from its segments' (`webscope merge`): their
/// histograms and counts added, the figures computed as a single run's over the merged
/// `seconds`. None when no segment ran users; an error when one did not keep its
/// histograms (a segment of an older build). The think times' KS distance needs the model,
/// which a report does not carry: left out.
pub(crate) fn merged(
    segments: &[Option<&UsersReport>],
    seconds: f64,
) -> Result<Option<UsersReport>, String> {
    let Some(first) = segments.iter().flatten().next() else {
        return Ok(None);
    };
    let mut stats = UserStats::new();
    for (i, r) in segments.iter().enumerate() {
        let r = r.ok_or_else(|| format!("segment {i} ran no users where others did"))?;
        let h = r.histograms.as_ref().ok_or_else(|| {
            "its users figures have no histograms (a build before issue 52): merge cannot add them".to_string()
        })?;
        // Checked: a segment's report comes from another host.
        let add = |a: u64, b: u64| {
            a.checked_add(b)
                .ok_or_else(|| "its users counts add up past u64".to_string())
        };
        stats.views = add(stats.views, r.page_views)?;
        stats.view_errors = add(stats.view_errors, r.page_view_errors)?;
        stats.sessions = add(stats.sessions, r.sessions)?;
        for (into, text) in [
            (&mut stats.page_load, &h.page_load),
            (&mut stats.think, &h.think),
        ] {
            let more = super::histograms::decode(text)?;
            add(into.len(), more.len())?;
            into.add(&more)
                .map_err(|e| format!("its users histograms cannot be added: {e:?}"))?;
        }
    }
    let mut merged = UsersReport {
        think_ks_distance: None,
        histograms: None,
        ..(*first).clone()
    };
    measured(&mut merged, &stats, seconds);
    Ok(Some(merged))
}

/// Adds an interval's users figures.
pub(crate) fn interval(report: &mut IntervalReport, stats: &UserStats, active: usize) {
    report.users = Some(IntervalUsers {
        active,
        page_views: stats.views,
        page_views_per_s: stats.views as f64 / report.duration_s.max(1e-9),
        page_load_us: Latency::of(&stats.page_load),
        page_load_p95_us: p95(&stats.page_load),
    });
}

/// The users figures of the segments' interval `reported` merged (`webscope merge`): users
/// active and page views added, over the merged interval's `seconds`; the page loads are
/// left for [`interval_loads`], from the interval logs' page lines. None when no segment
/// ran users.
pub(crate) fn merged_interval(reported: &[&IntervalReport], seconds: f64) -> Option<IntervalUsers> {
    let mut users = reported.iter().filter_map(|r| r.users.as_ref()).peekable();
    users.peek()?;
    let (active, page_views) = users.fold((0usize, 0u64), |(a, v), u| {
        (a.saturating_add(u.active), v.saturating_add(u.page_views))
    });
    Some(IntervalUsers {
        active,
        page_views,
        page_views_per_s: page_views as f64 / seconds.max(1e-9),
        ..IntervalUsers::default()
    })
}

/// Sets a merged interval's page loads from the sum of the segments' histograms of it.
pub(crate) fn interval_loads(users: &mut IntervalUsers, page_load: &hdrhistogram::Histogram<u64>) {
    users.page_load_us = Latency::of(page_load);
    users.page_load_p95_us = p95(page_load);
}

/// The largest gap between the histogram's empirical CDF (nanoseconds) and `cdf`, looked at
/// on both sides of each recorded value's step.
fn ks_distance(h: &hdrhistogram::Histogram<u64>, cdf: &dyn Fn(f64) -> f64) -> f64 {
    let n = h.len() as f64;
    if n == 0.0 {
        return 0.0;
    }
    let mut below = 0u64;
    let mut distance: f64 = 0.0;
    for v in h.iter_recorded() {
        let x = h.highest_equivalent(v.value_iterated_to()) as f64 / 1e9;
        let before = below as f64 / n;
        below += v.count_at_value();
        let f = cdf(x);
        distance = distance
            .max((f - before).abs())
            .max((f - below as f64 / n).abs());
    }
    distance
}

fn p95(h: &hdrhistogram::Histogram<u64>) -> f64 {
    if h.is_empty() {
        0.0
    } else {
        h.value_at_quantile(0.95) as f64 / 1000.0
    }
}

impl UsersReport {
    /// The summary's lines.
    pub fn summary(&self) -> String {
        use super::text::format_us;
        let load = &self.page_load_us;
        format!(
            "  Users       {} ({}, {}); {}\n  Page views  {} in {} sessions, {:.1}/s, {} with errors\n  Page load   p50 {}  p95 {}  p99 {}  max {}\n  Think time  configured mean {}, kept mean {} ({} kept{})\n{}",
            self.users,
            match self.streams_per_user {
                Some(streams) => format!("one connection each, up to {streams} streams at once"),
                None => format!("{} connections each", self.connections_per_user),
            },
            self.thinking,
            self.sessions_from,
            self.page_views,
            self.sessions,
            self.page_views_per_s,
            self.page_view_errors,
            format_us(load.p50),
            format_us(self.page_load_p95_us),
            format_us(load.p99),
            format_us(load.max),
            format_us(self.think_configured_s * 1e6),
            format_us(self.think_us.mean),
            self.think_us.count,
            self.think_ks_distance
                .map_or(String::new(), |d| format!("; KS distance {d:.3}")),
            self.law_line(),
        )
    }

    /// The response time law's line: R = N/X − Z with the caveat the lab gives, or why it is
    /// left out.
    fn law_line(&self) -> String {
        use super::text::format_us;
        let cycle_s = self.think_us.mean / 1e6 + self.page_load_us.mean / 1e6;
        if self.law_cycles < LAW_CYCLES {
            return format!(
                "  R = N/X - Z left out: a user went through {:.1} page views in the run, and the ramp-up (users waiting to begin) and the run's end (page views and thinks cut short) weigh too much on so few; run for {} or more ({LAW_CYCLES} x (Z + page load)) for the law to hold\n",
                self.law_cycles,
                webscope_report::human::duration(LAW_CYCLES * cycle_s),
            );
        }
        // Each user's page views outnumber its thinks by one at the run's end (or its last
        // think is cut short): N/X − Z comes out about Z / (page views per user) below R,
        // which must stay under half the page load for the law to say it (issue 52's check:
        // 4 users thinking 200 ms for 10 views each printed R = −1.2 ms beside 18 ms).
        let (z, load) = (self.think_us.mean / 1e6, self.page_load_us.mean / 1e6);
        let needed = if load > 0.0 {
            2.0 * z / load
        } else {
            f64::INFINITY
        };
        if self.law_cycles < needed {
            let run = if needed.is_finite() {
                format!(
                    "; run for {} or more ({needed:.0} page views each) for the law to hold",
                    webscope_report::human::duration(needed * cycle_s)
                )
            } else {
                String::new()
            };
            return format!(
                "  R = N/X - Z left out: it would be {} beside a mean page load of {}, off by about Z / {:.1} page views a user = {} (a user's page views outnumber its thinks by one at the run's end), more than half the page load{run}\n",
                format_us(self.law_response_s * 1e6),
                format_us(self.page_load_us.mean),
                self.law_cycles,
                format_us(z * 1e6 / self.law_cycles.max(1e-9)),
            );
        }
        format!(
            "  R = N/X - Z {} (the response time law, Z the kept mean; mean page load {}: they part by the ramp-up, users waiting to begin, and the run's end, which cuts page views and thinks short)\n",
            format_us(self.law_response_s * 1e6),
            format_us(self.page_load_us.mean),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(views: u64, users: usize, think_ms: f64, load_ms: f64) -> UsersReport {
        UsersReport {
            users,
            thinking: "thinking as the log's sessions, mean 11.3 s".into(),
            page_views: views,
            think_us: Latency {
                mean: think_ms * 1e3,
                ..Latency::default()
            },
            page_load_us: Latency {
                mean: load_ms * 1e3,
                ..Latency::default()
            },
            law_response_s: 2.15,
            law_cycles: views as f64 / users as f64,
            ..UsersReport::default()
        }
    }

    #[test]
    fn regression_52_the_law_is_left_out_where_it_cannot_hold_and_caveated_where_it_can() {
        // 50 users thinking 11.3 s for a minute: about 5 page views each.
        let short = report(250, 50, 11_300.0, 0.906).summary();
        assert!(
            short.contains(
                "Users       50 (0 connections each, thinking as the log's sessions, mean 11.3 s)"
            ),
            "{short}"
        );
        assert!(
            short.contains("R = N/X - Z left out: a user went through 5.0 page views"),
            "{short}"
        );
        assert!(short.contains("run for 1 m 53 s or more"), "{short}");
        assert!(!short.contains("2.15"), "{short}");
        let long = report(5000, 50, 26.0, 1.0).summary();
        assert!(
            long.contains("R = N/X - Z 2.15s (the response time law"),
            "{long}"
        );
        assert!(long.contains("they part by the ramp-up"), "{long}");
        // 10 views each of users thinking 200 ms with 18-ms page loads: the one think
        // fewer than views puts the law 20 ms off, past the page load itself.
        let mut off = report(40, 4, 200.0, 18.0);
        off.law_response_s = -0.0012;
        let off = off.summary();
        assert!(
            off.contains("R = N/X - Z left out: it would be -1200us beside a mean page load of 18.00ms, off by about Z / 10.0 page views a user = 20.00ms"),
            "{off}"
        );
        assert!(off.contains("(22 page views each)"), "{off}");
    }
}
