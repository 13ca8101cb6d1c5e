//! Users, not only requests (issue 37): `load --users N` runs N closed-loop virtual users,
//! each going through sessions of page views as a browser does, instead of connections that
//! each send the next request at once.
//!
//! A user takes a session: sampled from a log's sessions ([`Sessions::Logged`],
//! `--sessions LOG`, with the log's own URLs, order and think times), or drawn from a model
//! ([`Sessions::Model`]: page views per session, objects per page and think times from
//! distributions, the URLs from the target's mix). For each page view it requests the page,
//! then the page's objects over up to [`Users::connections`] connections in parallel (6, a
//! browser's per host: RFC 9112 left the number to clients, and every major browser settled
//! on 6), then waits its think time, whatever the server did, and goes on to the next page
//! view; at a session's end it thinks once more and takes a new session. A page view's
//! response time (its page load) runs from the page's request to its last object's answer.
//!
//! The defaults ([`SessionModel::surge`]) are SURGE's (Barford & Crovella, SIGMETRICS 1998):
//! objects per page from its embedded-reference Pareto (α 2.43, k 1) and think times from its
//! inactive OFF Pareto (α 1.5, k 1 s), truncated at 60 s here so that one draw cannot take a
//! user out of a short run (mean 2.6 s instead of 3 s); SURGE's users browse forever, so the
//! views per session (geometric, mean 5) are this crate's choice, not the paper's.
//!
//! What it is not: a browser (no HTML is parsed: a logged session's objects are the ones the
//! log shows after its page; no cookies, no caching between page views) nor an open-loop
//! arrival of sessions (users are a closed population: what MVA's interactive model with its
//! think time Z describes, and what "how many users can this site carry" asks).
//!
//! The engine side is `engine/users.rs`: users ride the HTTP/1.1 engine's connections (user
//! `u` of a thread owns its connections `u·C .. u·C+C`) and its timers (a think time is a
//! timer on the user's first connection), so timeouts, TLS, intervals and the interval log
//! work as for any run.

mod dist;
mod logged;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use dist::Dist;
pub use logged::{of_scripts, sessions_from_logs, LoggedSessions};
#[cfg(test)]
#[path = "scale_tests.rs"]
mod scale_tests;
/// Seconds without a request that end a logged session (characterize's rule, 30 min).
pub const SESSION_GAP_S: i64 = webscope_accesslog::characterize::sessions::SESSION_GAP_S;

/// Connections a browser opens to one host.
pub const BROWSER_CONNECTIONS: usize = 6;

/// What `--users` runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Users {
    /// The users: a closed population, each in a session at every moment of the run.
    pub count: usize,
    /// Connections each user opens at most (opened when first needed, kept alive).
    pub connections: usize,
    /// Where sessions come from.
    pub sessions: Sessions,
    /// The users start evenly spread over this long, so that their page views do not all
    /// come in step.
    pub ramp_up: Duration,
}

impl Users {
    /// The mean think time a user waits after a page view (MVA's Z), as configured: the
    /// model's mean, or the mean of the logged sessions' think times.
    pub fn mean_think_s(&self) -> f64 {
        match &self.sessions {
            Sessions::Model(model) => model.think.mean(),
            Sessions::Logged(logged) => logged.mean_think_s(),
        }
    }

    /// How long the users think, in words to stand beside every number of users (issue 52:
    /// "capacity 80 users" did not say that these users think for 10-600 ms).
    pub fn thinking(&self) -> String {
        self.sessions.thinking()
    }

    /// How the sessions are made, in words for the report.
    pub fn describe(&self) -> String {
        match &self.sessions {
            Sessions::Model(m) => format!(
                "sessions drawn from a model: page views {}, objects per page {}, think time {}",
                m.views, m.objects, m.think
            ),
            Sessions::Logged(l) => l.describe(),
        }
    }
}

/// Where the users' sessions come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Sessions {
    /// Drawn from distributions.
    Model(SessionModel),
    /// Sampled from a log's sessions.
    Logged(Logged),
}

impl Sessions {
    /// How long their users think: "thinking 10 ms-600 ms, mean 26 ms: SURGE's at 1/100", or
    /// "thinking as the log's sessions at 1/100, mean 113 ms".
    pub fn thinking(&self) -> String {
        use webscope_report::human::duration;
        match self {
            Sessions::Model(m) => {
                let range = match m.think {
                    Dist::Pareto {
                        scale,
                        max: Some(max),
                        ..
                    } => format!("{}-{}", duration(scale), duration(max)),
                    Dist::Constant { value } => duration(value),
                    _ => m.think.to_string(),
                };
                let surge = match (SessionModel::surge().think, m.think) {
                    (
                        Dist::Pareto {
                            alpha: a,
                            scale: k,
                            max: Some(x),
                        },
                        Dist::Pareto {
                            alpha,
                            scale,
                            max: Some(max),
                        },
                    ) if alpha == a && ((max / x) / (scale / k) - 1.0).abs() < 1e-9 => {
                        match scale / k {
                            f if (f - 1.0).abs() < 1e-9 => ": SURGE's".to_string(),
                            f => format!(": SURGE's at {}", scale_words(f)),
                        }
                    }
                    _ => String::new(),
                };
                format!("thinking {range}, mean {}{surge}", duration(m.think.mean()))
            }
            Sessions::Logged(l) => format!(
                "thinking as the log's sessions{}, mean {}",
                if l.think_scale == 1.0 {
                    String::new()
                } else {
                    format!(" at {}", scale_words(l.think_scale))
                },
                duration(l.mean_think_s())
            ),
        }
    }
}

/// A session model: each draw makes one session.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionModel {
    /// Page views per session (rounded up, at least 1).
    pub views: Dist,
    /// Objects requested after each page (rounded down).
    pub objects: Dist,
    /// Think time after each page view, seconds.
    pub think: Dist,
    /// Every page view's page is this request of the target (a generated page, say), its
    /// objects drawn from the target's mix; None: pages drawn from the mix too.
    #[serde(default)]
    pub page: Option<u32>,
}

impl SessionModel {
    /// SURGE's distributions (see the module doc).
    pub fn surge() -> SessionModel {
        SessionModel {
            views: Dist::Geometric { mean: 5.0 },
            objects: Dist::Pareto {
                alpha: 2.43,
                scale: 1.0,
                max: Some(150.0),
            },
            think: Dist::Pareto {
                alpha: 1.5,
                scale: 1.0,
                max: Some(60.0),
            },
            page: None,
        }
    }
}

/// Sessions sampled from a log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Logged {
    /// The sample; each user takes one at random when it starts a session.
    pub sessions: Vec<Session>,
    /// Of how many sessions the log had.
    pub population: u64,
    /// The log, as given.
    pub source: String,
    /// What the sample left out or cut, in words (bad lines, other methods, a gzip file cut
    /// short, the byte budget), said with the sample.
    #[serde(default)]
    pub note: Option<String>,
    /// The factor every think time of the sample was multiplied by (`--think-scale`), 1 as
    /// logged: the sessions keep their pages, objects, order and think times' shape, and
    /// the users think that much faster.
    #[serde(default = "as_logged")]
    pub think_scale: f64,
}

fn as_logged() -> f64 {
    1.0
}

/// Reads a think-time scale: a fraction (`1/100`) or a number (`0.01`), positive and finite.
pub fn parse_think_scale(text: &str) -> Result<f64, String> {
    let bad = || {
        format!("{text:?}: give the factor think times are multiplied by, as a fraction or a number, e.g. 1/100 or 0.01")
    };
    let value = match text.split_once('/') {
        Some((a, b)) => {
            let a: f64 = a.trim().parse().map_err(|_| bad())?;
            let b: f64 = b.trim().parse().map_err(|_| bad())?;
            a / b
        }
        None => text.trim().parse().map_err(|_| bad())?,
    };
    if value.is_finite() && value > 0.0 && value <= 1e6 {
        Ok(value)
    } else {
        Err(bad())
    }
}

/// A think-time scale as people write it: `1/100` for a hundredth, `0.3` otherwise.
pub fn scale_words(scale: f64) -> String {
    let inverse = 1.0 / scale;
    if scale < 1.0 && (inverse - inverse.round()).abs() < 1e-6 * inverse {
        format!("1/{}", inverse.round())
    } else {
        format!("{scale}")
    }
}

impl Logged {
    /// What was sampled from where, at what think-time scale, and what the sample left out
    /// or cut.
    pub fn describe(&self) -> String {
        let mut line = format!(
            "sessions sampled from {}: {} of its {} sessions",
            self.source,
            self.sessions.len(),
            self.population
        );
        if self.think_scale != 1.0 {
            line += &format!(
                ", think times at {} of the log's (mean {} instead of {}; pages, objects and order as logged)",
                scale_words(self.think_scale),
                webscope_report::human::duration(self.mean_think_s()),
                webscope_report::human::duration(self.mean_think_s() / self.think_scale),
            );
        }
        if let Some(note) = &self.note {
            line += &format!("; {note}");
        }
        line
    }

    /// The same sessions with every think time multiplied by `scale` (`--think-scale`):
    /// their shape kept, the users thinking that much faster.
    pub fn with_think_scale(mut self, scale: f64) -> Logged {
        for view in self.sessions.iter_mut().flat_map(|s| s.views.iter_mut()) {
            view.think_s = view.think_s.map(|t| t * scale);
        }
        self.think_scale *= scale;
        self
    }

    /// The mean of the sample's think times, seconds (what a user waits between sessions,
    /// too: a think time drawn from the sample's).
    pub fn mean_think_s(&self) -> f64 {
        let thinks: Vec<f64> = self.thinks().collect();
        if thinks.is_empty() {
            0.0
        } else {
            thinks.iter().sum::<f64>() / thinks.len() as f64
        }
    }

    /// Every think time of the sample, seconds.
    pub fn thinks(&self) -> impl Iterator<Item = f64> + '_ {
        self.sessions
            .iter()
            .flat_map(|s| s.views.iter().filter_map(|v| v.think_s))
    }
}

/// One session: its page views in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// In the order the user goes through them.
    pub views: Vec<View>,
}

/// One page view: the page, its objects, and the think time after it (None after a logged
/// session's last view: the user then draws one from the log's think times).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct View {
    /// The page, asked first.
    pub page: Request,
    /// Its objects, asked once the page is answered.
    pub objects: Vec<Request>,
    /// Seconds of thought after the view.
    pub think_s: Option<f64>,
}

/// One request of a session: its index in the target's requests, and the status a log gave
/// it (a different one is counted as a mismatch, as in a replay).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Index into the target's requests.
    pub request: u32,
    /// The status the log gave it.
    pub logged: Option<u16>,
}
