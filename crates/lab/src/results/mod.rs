//! The lab's results as types: what its experiments decided, as report.json keeps it, written
//! and read back through serde, so that `compare`, `--baseline` and the binary's exit codes
//! read types rather than string paths into JSON, and a field that is missing, misspelt or
//! tampered with is an error naming the file and the field rather than a quiet 0 (#47, #51).
//!
//! - [`ending`]: a search's ending (capacity in req/s, users in users), the record of
//!   `capacity::search::Ending`;
//! - [`search`]: a search's entry as `compare` reads it (its ending, the machine's reference
//!   speed, its server's own peak), checked, and the bracket it puts the capacity in;
//! - [`Searches`]: the two searches a report can hold;
//! - every other entry of report.json, as its page writes it: [`capacity`], [`users`],
//!   [`ab`], [`sweeps`] (clients and its runs, saturation, filesize, model, techniques,
//!   protocols), [`degradation`], [`replay`], and [`report`] (validity, the papers' findings,
//!   the baseline). Only `protocols_loss` still writes its own (#50).
//!
//! Not here: deciding (the judges: `capacity`, `objective`, `health`) nor drawing (`webscope-pages`);
//! this layer sits between them.

pub mod ab;
pub mod capacity;
pub mod degradation;
pub mod ending;
pub mod handshakes;
pub mod loss;
pub mod replay;
pub mod report;
pub mod search;
pub mod sweeps;
pub mod users;

use std::path::Path;

use serde::Deserialize;

pub use ending::{EndingRecord, RpsEnding, UsersEnding};
pub use search::SearchEntry;

use crate::capacity::compare::{Bracket, Searched};

/// What a report says of one of its searches.
#[derive(Debug, Clone, PartialEq)]
pub enum Search {
    /// It put the capacity in a bracket.
    Bracket(Bracket),
    /// It ran and ended without one (disturbed, cut): how it ended, in words.
    Ended(String),
    /// There is no such search.
    None,
}

/// The search `what` of an entry already in hand (a report being written), read as the
/// stored one would be.
pub fn search_in(entry: &serde_json::Value, what: Searched) -> Search {
    fn of<E: EndingRecord + serde::de::DeserializeOwned>(entry: &serde_json::Value) -> Search {
        match serde_json::from_value::<SearchEntry<E>>(entry.clone()) {
            Ok(e) => e.search(),
            Err(_) => Search::None,
        }
    }
    if entry.is_null() {
        return Search::None;
    }
    if what == Searched::USERS {
        of::<UsersEnding>(entry)
    } else {
        of::<RpsEnding>(entry)
    }
}

/// The searches of a lab report (`report.json`), the fields `compare` reads; the rest of
/// the file is left alone.
#[derive(Debug, Default, Deserialize)]
pub struct Searches {
    /// `lab --experiment capacity`.
    #[serde(default)]
    pub capacity: Option<SearchEntry<RpsEnding>>,
    /// `lab --experiment users`.
    #[serde(default)]
    pub users: Option<SearchEntry<UsersEnding>>,
}

impl Searches {
    /// The searches of the report.json in `dir`; none when there is no such file (a
    /// directory of load results, a lab run), an error naming the file and the field when
    /// it is there but not what webscope writes.
    pub fn of_lab(dir: &Path) -> anyhow::Result<Searches> {
        let path = dir.join("report.json");
        let Ok(bytes) = std::fs::read(&path) else {
            return Ok(Searches::default());
        };
        let searches: Searches = serde_json::from_slice(&bytes)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        for (name, problem) in [
            (
                "capacity",
                searches.capacity.as_ref().and_then(|s| s.check().err()),
            ),
            (
                "users",
                searches.users.as_ref().and_then(|s| s.check().err()),
            ),
        ] {
            if let Some(problem) = problem {
                anyhow::bail!(
                    "{}: {name}.{problem} (not what webscope writes: re-render the lab with webscope report, or run it again)",
                    path.display()
                );
            }
        }
        Ok(searches)
    }

    /// The search `what`.
    pub fn get(&self, what: Searched) -> Search {
        let found = if what == Searched::USERS {
            self.users.as_ref().map(SearchEntry::search)
        } else {
            self.capacity.as_ref().map(SearchEntry::search)
        };
        found.unwrap_or(Search::None)
    }

    /// Whether a search ended without a capacity because the machine stayed disturbed, and
    /// its sentence: the lab exits 4 then.
    pub fn disturbed(&self) -> Option<String> {
        let capacity = self
            .capacity
            .as_ref()
            .filter(|s| s.ending.as_ref().is_some_and(|e| e.disturbed()));
        let users = self
            .users
            .as_ref()
            .filter(|s| s.ending.as_ref().is_some_and(|e| e.disturbed()));
        capacity
            .map(|s| s.sentence.clone())
            .or_else(|| users.map(|s| s.sentence.clone()))
    }
}
