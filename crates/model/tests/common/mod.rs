//! Helpers shared by the model's integration tests.
#![allow(dead_code)]

use webscope_model::mva::{self, Method, Options, Solution};
use webscope_model::{Class, Discipline, Network, Station, StationKind};

/// A station for [`net`]: (name, servers (0 = delay), service time per visit, visits), one
/// entry per class for the last two.
pub struct St<'a> {
    pub name: &'a str,
    pub servers: u32,
    pub ps: bool,
    pub service: Vec<f64>,
    pub visits: Vec<f64>,
}

pub fn st<'a>(name: &'a str, servers: u32, service: &[f64], visits: &[f64]) -> St<'a> {
    St {
        name,
        servers,
        ps: false,
        service: service.to_vec(),
        visits: visits.to_vec(),
    }
}

/// A station given by its demands (one visit per job).
pub fn dem<'a>(name: &'a str, servers: u32, demands: &[f64]) -> St<'a> {
    st(name, servers, demands, &vec![1.0; demands.len()])
}

pub fn net(classes: &[(&str, u32, f64)], stations: Vec<St>) -> Network {
    let classes = classes
        .iter()
        .map(|&(name, population, think_time)| Class {
            name: name.into(),
            population,
            think_time,
        })
        .collect();
    let stations = stations
        .into_iter()
        .map(|s| {
            let kind = if s.servers == 0 {
                StationKind::Delay
            } else {
                StationKind::Queue {
                    servers: s.servers,
                    discipline: if s.ps {
                        Discipline::Ps
                    } else {
                        Discipline::Fcfs
                    },
                }
            };
            let demands = s
                .service
                .iter()
                .zip(&s.visits)
                .map(|(a, b)| a * b)
                .collect();
            Station {
                name: s.name.into(),
                kind,
                demands,
                service_times: Some(s.service),
            }
        })
        .collect();
    Network::new(classes, stations).unwrap()
}

pub fn solve(network: &Network, method: Method) -> Solution {
    let options = Options {
        method,
        ..Options::default()
    };
    let solved = mva::solve(network, &options).unwrap();
    assert_eq!(solved.plan.method, method);
    solved.solutions.into_iter().next().unwrap()
}

/// Checks a computed figure against a published one, given as the book prints it: within
/// 1e-3 relative, or within half a unit of the last printed digit when the book rounds
/// more coarsely than that.
#[track_caller]
pub fn published(actual: f64, printed: &str) {
    let expected: f64 = printed.parse().unwrap();
    let decimals = printed.split('.').nth(1).map_or(0, str::len) as i32;
    let rounding = 0.5 * 10f64.powi(-decimals);
    let tolerance = (1e-3 * expected.abs()).max(rounding) * (1.0 + 1e-9);
    assert!(
        (actual - expected).abs() <= tolerance,
        "computed {actual}, published {printed} (tolerance {tolerance:e})"
    );
}

/// Relative closeness for figures that are exact fractions.
#[track_caller]
pub fn near(actual: f64, expected: f64, rel: f64) {
    assert!(
        (actual - expected).abs() <= rel * expected.abs().max(1e-300),
        "computed {actual}, expected {expected} (relative {rel:e})"
    );
}
