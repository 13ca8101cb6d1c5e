//! `webscope load --users N`: the flags of a users run, and the `Users` plan they make (issue
//! 37). The engine side is webscope-load's `users` module.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use webscope_load::users::{
    sessions_from_logs, Dist, LoggedSessions, SessionModel, Sessions, Users, BROWSER_CONNECTIONS,
};

/// The users flags (flattened into `webscope load`'s).
#[derive(clap::Args, Debug, Default)]
pub(super) struct UserFlags {
    /// Run N virtual users instead of connections, closed loop: each takes a session (drawn
    /// from --views/--objects/--think, SURGE's by default, or sampled from --sessions LOG),
    /// requests each page view's page, then its objects over up to --user-connections
    /// connections in parallel, as a browser does, then thinks; at a session's end it takes
    /// another. The report adds page views per second, page load times (from the page's
    /// request to its last object), the think times kept, and R = N/X − Z. With --http2,
    /// each user keeps one connection and its requests go as streams of it.
    #[arg(long, value_name = "N", conflicts_with_all = ["rate", "replay", "groups", "connections", "think_time", "requests"])]
    pub users: Option<usize>,
    /// Users: page views per session [default: geo(5)]. Distributions are written
    /// const(X), exp(MEAN), geo(MEAN), pareto(ALPHA,SCALE), lognormal(MU,SIGMA), and with a
    /// largest value drawn: pareto(ALPHA,SCALE,MAX), lognormal(MU,SIGMA,MAX).
    #[arg(long, value_name = "DIST", value_parser = Dist::parse, requires = "users")]
    pub views: Option<Dist>,
    /// Users: objects requested after each page, rounded down [default: pareto(2.43,1,150),
    /// SURGE's embedded references].
    #[arg(long, value_name = "DIST", value_parser = Dist::parse, requires = "users")]
    pub objects: Option<Dist>,
    /// Users: think time after each page view, in seconds or with a unit (ms, s, m)
    /// [default: pareto(1.5,1s,60s), SURGE's inactive OFF times, truncated at 60 s].
    #[arg(long, value_name = "DIST", value_parser = Dist::parse, requires = "users")]
    pub think: Option<Dist>,
    /// Users: connections each user opens at most [default: 6, a browser's per host]; with
    /// --http2, the streams each user has out at once on its one connection.
    #[arg(long, value_name = "N", requires = "users")]
    pub user_connections: Option<usize>,
    /// Users: start them evenly over this long [default: the mean think time, at most a
    /// quarter of the run], so that their page views do not come in step.
    #[arg(long, value_name = "DURATION", value_parser = crate::cmd::duration, requires = "users")]
    pub ramp_up: Option<Duration>,
    /// Users: sample their sessions from this access log (repeat for more files; Common or
    /// Combined, plain or gzip), with the log's URLs, order and think times, sent to the
    /// server of the URL (or --base). A session is a client address and user agent until
    /// --session-gap without a request, as `webscope characterize` counts them.
    #[arg(long, value_name = "LOG", requires = "users", conflicts_with_all = ["views", "objects", "think", "fileset"])]
    pub sessions: Vec<PathBuf>,
    /// Users: multiply the think times of --sessions LOG by this (1/100, 0.01), keeping the
    /// sessions' pages, objects and order: a site whose users think for seconds then needs a
    /// hundredth of the users to load the server as many would. Said with the users
    #[arg(long, value_name = "FACTOR", value_parser = webscope_load::users::parse_think_scale, requires = "sessions")]
    pub think_scale: Option<f64>,
    /// Users: the pause that ends a logged session.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::cmd::duration, requires = "sessions")]
    pub session_gap: Duration,
}

/// Sessions kept from a log: enough for the users to draw varied sessions from, few enough
/// to carry in a config (a few MB; their scripts are kept within
/// `webscope_accesslog::SCRIPT_BUDGET` whatever the log's URLs).
pub(super) const SESSION_SAMPLE: usize = 10_000;

impl UserFlags {
    /// The sessions of `--sessions LOG`, sampled with `seed`; None without the flag.
    pub(super) fn logged(&self, seed: u64) -> anyhow::Result<Option<LoggedSessions>> {
        if self.sessions.is_empty() {
            return Ok(None);
        }
        let gap = i64::try_from(self.session_gap.as_secs().max(1)).unwrap_or(i64::MAX);
        let mut logged = sessions_from_logs(&self.sessions, None, gap, SESSION_SAMPLE, seed)?;
        if let Some(scale) = self.think_scale {
            logged.logged = logged.logged.with_think_scale(scale);
        }
        Ok(Some(logged))
    }

    /// The users plan for a run of `duration`, from a model (`sessions` None) or a log's
    /// sessions already read.
    pub(super) fn plan(
        &self,
        duration: Duration,
        sessions: Option<Sessions>,
    ) -> Option<Arc<Users>> {
        let count = self.users?;
        let surge = SessionModel::surge();
        let sessions = sessions.unwrap_or(Sessions::Model(SessionModel {
            views: self.views.unwrap_or(surge.views),
            objects: self.objects.unwrap_or(surge.objects),
            think: self.think.unwrap_or(surge.think),
            page: None,
        }));
        let mut users = Users {
            count,
            connections: self.user_connections.unwrap_or(BROWSER_CONNECTIONS),
            sessions,
            ramp_up: Duration::ZERO,
        };
        users.ramp_up = self.ramp_up.unwrap_or_else(|| {
            Duration::from_secs_f64(users.mean_think_s().max(0.0)).min(duration / 4)
        });
        Some(Arc::new(users))
    }
}
