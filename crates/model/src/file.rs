//! Model files: a closed network in TOML, read from a string (the caller reads the file).
//!
//! ```toml
//! [[class]]
//! name = "pdf"
//! population = 20        # jobs (clients) in the class
//! think_time = 0.0       # seconds at the terminals (Z)
//!
//! [[station]]
//! name = "cpu"
//! kind = "queue"         # or "delay"
//! servers = 4            # default 1
//! discipline = "ps"      # or "fcfs" (the default)
//! demand = { pdf = 0.583 }
//! # or: service_time = { pdf = 0.1 } and visits = { pdf = 5.83 }
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::network::{join_names, Class, Discipline, Station, StationKind};
use crate::{Error, Network};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    #[serde(default, rename = "class")]
    classes: Vec<FileClass>,
    #[serde(default, rename = "station")]
    stations: Vec<FileStation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileClass {
    name: String,
    // Signed so that a negative population gets our message, not a type error.
    population: i64,
    #[serde(default)]
    think_time: f64,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum FileKind {
    Queue,
    Delay,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum FileDiscipline {
    Fcfs,
    Ps,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStation {
    name: String,
    #[serde(default = "queue")]
    kind: FileKind,
    servers: Option<i64>,
    discipline: Option<FileDiscipline>,
    demand: Option<BTreeMap<String, f64>>,
    service_time: Option<BTreeMap<String, f64>>,
    visits: Option<BTreeMap<String, f64>>,
}

fn queue() -> FileKind {
    FileKind::Queue
}

impl Network {
    /// Reads a model from TOML text. Errors are one line: a syntax error says where
    /// (line, column), a model error names the class or station.
    pub fn from_toml_str(text: &str) -> Result<Network, Error> {
        let file: FileModel = toml::from_str(text).map_err(|e| syntax_error(text, &e))?;
        if file.classes.is_empty() {
            return Err(Error::invalid(
                "the model has no [[class]]: add one with a name and a population",
            ));
        }
        let classes = file
            .classes
            .iter()
            .map(|c| {
                let population = u32::try_from(c.population).map_err(|_| {
                    Error::invalid(format!(
                        "class '{}' has population {}: it must be a whole number of jobs, 1 or more",
                        c.name, c.population
                    ))
                })?;
                Ok(Class {
                    name: c.name.clone(),
                    population,
                    think_time: c.think_time,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let names: Vec<&str> = classes.iter().map(|c| c.name.as_str()).collect();
        let stations = file
            .stations
            .iter()
            .map(|s| station(s, &names))
            .collect::<Result<Vec<_>, Error>>()?;
        Network::new(classes, stations)
    }
}

fn station(s: &FileStation, classes: &[&str]) -> Result<Station, Error> {
    let kind = match s.kind {
        FileKind::Delay => {
            if s.servers.is_some() || s.discipline.is_some() {
                return Err(Error::invalid(format!(
                    "station '{}' is a delay (infinite servers): remove its servers/discipline, or make it kind = \"queue\"",
                    s.name
                )));
            }
            StationKind::Delay
        }
        FileKind::Queue => {
            let servers = s.servers.unwrap_or(1);
            let servers = u32::try_from(servers)
                .ok()
                .filter(|m| *m >= 1)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "station '{}' has servers = {servers}: a queue needs 1 or more servers",
                        s.name
                    ))
                })?;
            let discipline = match s.discipline.unwrap_or(FileDiscipline::Fcfs) {
                FileDiscipline::Fcfs => Discipline::Fcfs,
                FileDiscipline::Ps => Discipline::Ps,
            };
            StationKind::Queue {
                servers,
                discipline,
            }
        }
    };
    let (demands, service_times) = demands(s, classes)?;
    Ok(Station {
        name: s.name.clone(),
        kind,
        demands,
        service_times,
    })
}

type Demands = (Vec<f64>, Option<Vec<f64>>);

/// Demands in class order, from `demand` or from `service_time` × `visits`.
fn demands(s: &FileStation, classes: &[&str]) -> Result<Demands, Error> {
    for (key, map) in [
        ("demand", &s.demand),
        ("service_time", &s.service_time),
        ("visits", &s.visits),
    ] {
        for (class, value) in map.iter().flatten() {
            if !classes.contains(&class.as_str()) {
                return Err(Error::invalid(format!(
                    "station '{}': {key} names class '{class}', which is not a [[class]] (classes: {})",
                    s.name,
                    join_names(classes.iter().copied())
                )));
            }
            if !value.is_finite() || *value < 0.0 {
                return Err(Error::invalid(format!(
                    "station '{}': {key} of class '{class}' is {value}: it must be a finite number, 0 or more",
                    s.name
                )));
            }
        }
    }
    match (&s.demand, &s.service_time) {
        (Some(_), Some(_)) => Err(Error::invalid(format!(
            "station '{}' has both demand and service_time: give one (demand = visits × service_time)",
            s.name
        ))),
        (None, None) => Err(Error::invalid(format!(
            "station '{}' has no demand: add demand = {{ {} = SECONDS }} (0 for a class that never visits)",
            s.name,
            classes[0]
        ))),
        (Some(demand), None) => {
            if s.visits.is_some() {
                return Err(Error::invalid(format!(
                    "station '{}': visits go with service_time, not with demand (demand already counts the visits)",
                    s.name
                )));
            }
            let d = classes
                .iter()
                .map(|c| lookup(demand, c, s, "demand"))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((d, None))
        }
        (None, Some(times)) => {
            let mut d = Vec::with_capacity(classes.len());
            let mut t = Vec::with_capacity(classes.len());
            for c in classes {
                let time = lookup(times, c, s, "service_time")?;
                let visits = match &s.visits {
                    None => 1.0,
                    Some(v) => lookup(v, c, s, "visits")?,
                };
                t.push(time);
                d.push(time * visits);
            }
            Ok((d, Some(t)))
        }
    }
}

fn lookup(
    map: &BTreeMap<String, f64>,
    class: &str,
    s: &FileStation,
    key: &str,
) -> Result<f64, Error> {
    map.get(class).copied().ok_or_else(|| {
        Error::invalid(format!(
            "station '{}': no {key} for class '{class}' (write {class} = 0 if it never visits)",
            s.name
        ))
    })
}

/// Turns the TOML reader's multi-line report into one line with a position.
fn syntax_error(text: &str, err: &toml::de::Error) -> Error {
    let (line, column) = match err.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            (line, column)
        }
        None => (1, 1),
    };
    let message = err
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    Error::Syntax {
        line,
        column,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAPER: &str = r#"
[[class]]
name = "pdf"
population = 20

[[class]]
name = "zip"
population = 20
think_time = 0.0

[[station]]
name = "cpu"
servers = 2
discipline = "ps"
demand = { pdf = 0.583052311, zip = 0.610083972 }

[[station]]
name = "disk"
service_time = { pdf = 0.01, zip = 0.01 }
visits = { pdf = 3.2254983, zip = 2.1106645 }

[[station]]
name = "net"
kind = "delay"
demand = { pdf = 0.1, zip = 0 }
"#;

    fn err(text: &str) -> String {
        Network::from_toml_str(text).unwrap_err().to_string()
    }

    #[test]
    fn reads_classes_stations_and_demands() {
        let net = Network::from_toml_str(PAPER).unwrap();
        assert_eq!(net.populations(), vec![20, 20]);
        let cpu = &net.stations()[0];
        assert_eq!(
            cpu.kind,
            StationKind::Queue {
                servers: 2,
                discipline: Discipline::Ps
            }
        );
        assert_eq!(cpu.demands, vec![0.583052311, 0.610083972]);
        let disk = &net.stations()[1];
        assert!((disk.demands[0] - 0.032254983).abs() < 1e-12);
        assert!(!disk.class_dependent_service());
        assert_eq!(net.stations()[2].kind, StationKind::Delay);
    }

    #[test]
    fn syntax_errors_are_one_line_with_a_position() {
        let e = err("[[class]]\nname = \"a\"\npopulation = 1\nthinktime = 3\n");
        assert!(e.starts_with("line 4, column 1:"), "{e}");
        assert!(e.contains("unknown field `thinktime`"), "{e}");
        assert!(!e.contains('\n'));
        let e = err("[[station]]\nname = \"x\"\nkind = \"dely\"\n");
        assert!(e.contains("line 3") && e.contains("dely"), "{e}");
    }

    #[test]
    fn model_errors_name_the_culprit() {
        let base = "[[class]]\nname = \"a\"\npopulation = 1\n[[station]]\nname = \"cpu\"\n";
        assert!(err(&format!("{base}demand = {{ b = 1 }}")).contains("names class 'b'"));
        assert!(err(&format!("{base}demand = {{ a = -1 }}")).contains("is -1"));
        assert!(err(&format!("{base}servers = 0\ndemand = {{ a = 1 }}")).contains("servers = 0"));
        assert!(err(base).contains("no demand"));
        assert!(err(&format!(
            "{base}demand = {{ a = 1 }}\nservice_time = {{ a = 1 }}"
        ))
        .contains("both demand and service_time"));
        assert!(err(&format!(
            "{base}kind = \"delay\"\nservers = 2\ndemand = {{ a = 1 }}"
        ))
        .contains("is a delay"));
        assert!(err("[[class]]\nname = \"a\"\npopulation = -2\n").contains("population -2"));
        assert!(err("[[class]]\nname = \"a\"\npopulation = 0\n[[station]]\nname = \"c\"\ndemand = { a = 1 }")
            .contains("population 0"));
        assert!(err("").contains("no [[class]]"));
        let two = "[[class]]\nname = \"a\"\npopulation = 1\n[[class]]\nname = \"b\"\npopulation = 1\n[[station]]\nname = \"cpu\"\ndemand = { a = 1 }";
        assert!(err(two).contains("no demand for class 'b'"), "{}", err(two));
    }
}
