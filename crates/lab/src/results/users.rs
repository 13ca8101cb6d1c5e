//! The users search's entry in report.json, as the page writes it: typed, so that its keys
//! are spelt once and [`super::SearchEntry`] reads back what was written. The page
//! (`webscope_pages::users`) fills it; nothing here decides or draws.

use serde::{Deserialize, Serialize};

use super::capacity::{MachineReference, Tipped};
use super::UsersEnding;
use crate::users::model::{Prediction, StepFigures};

/// `report.json`'s `users`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UsersEntry {
    /// The machine's reference loop over the search.
    pub machine_reference: Option<MachineReference>,
    /// The measured ending and MVA's prediction, in words.
    pub sentence: String,
    /// The numbers of users where the steps tipped.
    pub tipped: Vec<Tipped>,
    /// How the search ended; none when it was cut before its end.
    pub ending: Option<UsersEnding>,
    /// The capacity found, users.
    pub capacity_users: Option<f64>,
    /// The users' think times in words ("thinking 10 ms-600 ms, mean 26 ms: SURGE's at
    /// 1/100"), said beside every number of users.
    pub thinking: String,
    /// MVA's prediction from the steps.
    pub prediction: Option<Prediction>,
    /// Every step's figures.
    pub steps: Vec<StepFigures>,
}
