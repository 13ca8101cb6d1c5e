//! A log's sessions made into users' sessions (`load --users N --sessions LOG`): the
//! sessions webscope-accesslog's `session_scripts` samples, their requests made distinct and
//! prebuilt as a replay's are (a logged 206 asks its Range, a logged 304 is conditional),
//! and each session's views pointing into them.
//!
//! A request of a method other than GET and HEAD is left out, as in a replay (by the one
//! rule, `replay::replayed`). A view whose page is one has its first object as its page; a view left
//! empty is dropped, its think time going to the view before.

use std::collections::HashMap;
use std::path::PathBuf;

use webscope_accesslog::{
    session_scripts, Format, ReadOptions, ReadSummary, ScriptRequest, Scripts,
};
use webscope_report::human::{bytes, plural};

use super::{Logged, Request, Session, View};
use crate::replay::ReplayRequest;
use crate::Error;

/// What a log's sessions give a users run: the distinct requests (the target's), the
/// sessions over them, and how many requests were left out for their method.
pub struct LoggedSessions {
    /// The distinct requests, in order of first use.
    pub requests: Vec<ReplayRequest>,
    /// The sample of sessions.
    pub logged: Logged,
    /// Requests left out: of a method other than GET and HEAD.
    pub skipped_method: u64,
}

impl LoggedSessions {
    /// The line said before the run: what was sampled, and what was left out or cut.
    pub fn describe(&self) -> String {
        self.logged.describe()
    }
}

/// Reads the sessions of `logs` (sessions ended by `gap_s` without a request), keeps a
/// uniform sample of at most `limit` drawn with `seed`.
pub fn sessions_from_logs(
    logs: &[PathBuf],
    format: Option<Format>,
    gap_s: i64,
    limit: usize,
    seed: u64,
) -> Result<LoggedSessions, Error> {
    let (scripts, read) = session_scripts(logs, &ReadOptions::format(format), gap_s, limit, seed)
        .map_err(|e| Error::Config(format!("--sessions: {e}")))?;
    let source = logs
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut made = of_scripts(&scripts, source);
    made.logged.note = left_out(&scripts, &read, logs, made.skipped_method);
    if made.logged.sessions.is_empty() {
        return Err(Error::Config(format!(
            "--sessions: no session of the log can be run ({} sessions read, {} requests neither GET nor HEAD left out): give a log with GET or HEAD requests",
            scripts.sessions, made.skipped_method
        )));
    }
    Ok(made)
}

/// What the sample leaves out, in words, or `None` when nothing was: lines that did not
/// parse (issue 51, item 9: 200 future-dated lines of 400 went unmentioned), requests of
/// another method than GET and HEAD, a gzip file cut short, and a sample the byte budget
/// made smaller or whose sessions it cut.
fn left_out(
    scripts: &Scripts,
    read: &ReadSummary,
    logs: &[PathBuf],
    skipped_method: u64,
) -> Option<String> {
    let mut notes = Vec::new();
    if read.bad_lines > 0 {
        let first = read.bad_examples.first().map_or(String::new(), |bad| {
            format!(
                " (first: {} line {}: {})",
                logs.get(bad.file)
                    .map_or(String::new(), |p| p.display().to_string()),
                bad.line,
                bad.why
            )
        });
        notes.push(format!(
            "{} of {} unreadable, left out{first}",
            plural(read.bad_lines, "line"),
            read.lines
        ));
    }
    if skipped_method > 0 {
        notes.push(format!(
            "{} neither GET nor HEAD left out (a log keeps no body)",
            plural(skipped_method, "request")
        ));
    }
    if let Some(cut) = read.cut_note(logs) {
        notes.push(cut);
    }
    if let Some(sampled) = crate::replay_log::sampled_words(&scripts.coverage) {
        // Issue 52: a sample's sessions and think times were shown as the site's.
        notes.push(format!(
            "the log is a sample ({sampled}): its sessions are cut at the sampled minutes' edges and its think times are only those within them, so both are shorter than the site's"
        ));
    }
    if scripts.budget_cut {
        let mut why = format!(
            "the sample was made smaller to keep its scripts within {}",
            bytes(scripts.budget as f64)
        );
        if scripts.cut_for_bytes > 0 {
            why += &format!(
                " ({} cut at {} each)",
                plural(scripts.cut_for_bytes, "session"),
                bytes((scripts.budget / 16) as f64)
            );
        }
        notes.push(why);
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// The users' sessions of `scripts`.
pub fn of_scripts(scripts: &Scripts, source: String) -> LoggedSessions {
    let mut interned: HashMap<ReplayRequest, u32> = HashMap::new();
    let mut requests = Vec::new();
    let mut skipped_method = 0;
    let mut intern = |r: &ScriptRequest| -> Option<Request> {
        let Some(distinct) = distinct(r) else {
            skipped_method += 1;
            return None;
        };
        let index = *interned.entry(distinct.clone()).or_insert_with(|| {
            requests.push(distinct);
            requests.len() as u32 - 1
        });
        Some(Request {
            request: index,
            logged: Some(r.status),
        })
    };
    let mut sessions = Vec::new();
    for script in &scripts.scripts {
        let mut views: Vec<View> = Vec::new();
        for view in &script.views {
            let mut kept = std::iter::once(&view.page)
                .chain(&view.objects)
                .filter_map(&mut intern);
            match kept.next() {
                Some(page) => views.push(View {
                    page,
                    objects: kept.collect(),
                    think_s: view.think_s,
                }),
                // Nothing left of the view: the user thinks on from the view before.
                None => {
                    if let Some(last) = views.last_mut() {
                        last.think_s = match (last.think_s, view.think_s) {
                            (Some(a), Some(b)) => Some(a + b),
                            (a, b) => a.or(b),
                        };
                    }
                }
            }
        }
        if !views.is_empty() {
            sessions.push(Session { views });
        }
    }
    LoggedSessions {
        requests,
        logged: Logged {
            sessions,
            population: scripts.sessions,
            source,
            note: None,
            think_scale: 1.0,
        },
        skipped_method,
    }
}

/// The request a logged one is sent as (the replay's rule), None for a body-carrying method.
fn distinct(r: &ScriptRequest) -> Option<ReplayRequest> {
    ReplayRequest::as_logged(&r.method, &r.target, r.status, r.bytes)
}
