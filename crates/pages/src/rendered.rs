//! What the experiments' pages add to the report as they are drawn, gathered until the
//! driver writes it: the sections, the terminal summary, report.json's entries, the CSV files,
//! and the tally of judged runs for the validity banner. Not for writing any of it (the
//! report's driver does).

use serde_json::Value;
use webscope_report::Section;

use webscope_record::health::Judge;

/// What the experiments' renderers produce, gathered into the page, the terminal summary,
/// `report.json` and the CSV files.
pub struct Rendered {
    /// The page's sections, in the experiments' order.
    pub sections: Vec<Section>,
    /// The terminal summary, one block of lines per experiment.
    pub summary: String,
    /// report.json's entries, one per experiment, keyed by its name.
    pub json: serde_json::Map<String, Value>,
    /// CSV files to write at the top of the report directory: name, content.
    pub csv: Vec<(String, String)>,
    /// How runs are judged.
    pub judge: Judge,
    /// Invalid runs, "experiment, run: why", for the banner at the top of the page.
    pub invalid: Vec<String>,
    /// Runs judged, valid or not.
    pub judged: usize,
}

impl Rendered {
    /// Nothing drawn yet; runs to be judged as `judge` says.
    pub fn new(judge: Judge) -> Rendered {
        Rendered {
            sections: Vec::new(),
            summary: String::new(),
            json: serde_json::Map::new(),
            csv: Vec::new(),
            judge,
            invalid: Vec::new(),
            judged: 0,
        }
    }
}
