//! A closed queueing network: job classes (population and think time) visiting stations
//! (queues with one or more servers, or delays) with a service demand per class.
//!
//! A [`Network`] is always valid once built: every constructor and modifier checks it, so
//! the solvers never see a negative demand, an unknown class or an empty population.

use crate::Error;

/// A class of jobs: a fixed number of clients that cycle between their terminals (think
/// time) and the stations.
#[derive(Debug, Clone, PartialEq)]
pub struct Class {
    /// Name used in files, tables and JSON.
    pub name: String,
    /// Number of jobs (clients) of this class in the network.
    pub population: u32,
    /// Mean time (s) a job spends at its terminal between requests (Z); 0 for a batch class.
    pub think_time: f64,
}

/// How a queue shares its servers among the jobs waiting at it. It only matters for
/// multi-server queues, where exact MVA needs either processor sharing or per-visit service
/// times that are the same for every class (BCMP's conditions for a product form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discipline {
    /// First come, first served: a disk, a thread pool.
    Fcfs,
    /// Processor sharing: a CPU time-shared by the scheduler.
    Ps,
}

/// What kind of station it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StationKind {
    /// A queue with `servers` identical servers (1 for a load-independent queue).
    Queue {
        /// Identical servers (CPU cores, disk spindles); at least 1.
        servers: u32,
        /// How the servers are shared.
        discipline: Discipline,
    },
    /// An infinite server: time is spent there but nobody waits (a network link's latency,
    /// a fixed sleep).
    Delay,
}

impl StationKind {
    /// A single-server FCFS queue, the textbook "queueing center".
    pub const QUEUE: StationKind = StationKind::Queue {
        servers: 1,
        discipline: Discipline::Fcfs,
    };

    /// The number of servers, or `None` for a delay.
    pub fn servers(&self) -> Option<u32> {
        match self {
            StationKind::Queue { servers, .. } => Some(*servers),
            StationKind::Delay => None,
        }
    }
}

/// A station and the demand each class puts on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Station {
    /// Name used in files, tables and JSON.
    pub name: String,
    /// Queue or delay.
    pub kind: StationKind,
    /// Seconds of service per job of each class (visits × service time), in class order.
    pub demands: Vec<f64>,
    /// Seconds per visit of each class when the model gave them; they decide whether a
    /// multi-server FCFS queue's service times are class-independent.
    pub service_times: Option<Vec<f64>>,
}

impl Station {
    /// A station with the given demands (in class order).
    pub fn new(name: impl Into<String>, kind: StationKind, demands: Vec<f64>) -> Station {
        Station {
            name: name.into(),
            kind,
            demands,
            service_times: None,
        }
    }

    /// Whether the per-visit service time differs between the classes that visit the
    /// station. Without service times, the demands stand for them (one visit per job).
    pub fn class_dependent_service(&self) -> bool {
        let times = self.service_times.as_ref().unwrap_or(&self.demands);
        let mut visiting = times
            .iter()
            .zip(&self.demands)
            .filter(|(_, d)| **d > 0.0)
            .map(|(t, _)| *t);
        let Some(first) = visiting.next() else {
            return false;
        };
        visiting.any(|t| (t - first).abs() > 1e-9 * first.abs().max(t.abs()))
    }

    /// Whether exact MVA solves this station exactly: delays and single-server queues
    /// always; multi-server queues when processor-shared or when every class has the same
    /// per-visit service time.
    pub fn exact_solvable(&self) -> bool {
        match self.kind {
            StationKind::Queue {
                servers,
                discipline: Discipline::Fcfs,
            } if servers > 1 => !self.class_dependent_service(),
            _ => true,
        }
    }
}

/// A closed multi-class queueing network, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    classes: Vec<Class>,
    stations: Vec<Station>,
}

impl Network {
    /// Checks and builds a network. Errors name the class or station at fault.
    pub fn new(classes: Vec<Class>, stations: Vec<Station>) -> Result<Network, Error> {
        check_classes(&classes)?;
        check_stations(&stations, &classes)?;
        for (r, class) in classes.iter().enumerate() {
            let total: f64 = stations.iter().map(|s| s.demands[r]).sum();
            if total <= 0.0 && class.think_time <= 0.0 {
                return Err(Error::invalid(format!(
                    "class '{}' has no demand at any station and no think time: its throughput would be infinite (give it a demand)",
                    class.name
                )));
            }
        }
        Ok(Network { classes, stations })
    }

    /// A one-class network from measured demands, the shape the lab builds from a run:
    /// `stations` are (name, servers, demand in seconds); servers 0 makes a delay.
    pub fn single_class(
        name: &str,
        population: u32,
        think_time: f64,
        stations: &[(&str, u32, f64)],
    ) -> Result<Network, Error> {
        let classes = vec![Class {
            name: name.to_string(),
            population,
            think_time,
        }];
        let stations = stations
            .iter()
            .map(|&(name, servers, demand)| {
                let kind = if servers == 0 {
                    StationKind::Delay
                } else {
                    StationKind::Queue {
                        servers,
                        discipline: Discipline::Fcfs,
                    }
                };
                Station::new(name, kind, vec![demand])
            })
            .collect();
        Network::new(classes, stations)
    }

    /// The classes, in file order.
    pub fn classes(&self) -> &[Class] {
        &self.classes
    }

    /// The stations, in file order.
    pub fn stations(&self) -> &[Station] {
        &self.stations
    }

    /// The populations, in class order.
    pub fn populations(&self) -> Vec<u32> {
        self.classes.iter().map(|c| c.population).collect()
    }

    /// The same network with other populations (one per class, each at least 1).
    pub fn with_populations(&self, populations: &[u32]) -> Result<Network, Error> {
        if populations.len() != self.classes.len() {
            return Err(Error::invalid(format!(
                "{} populations given for {} classes",
                populations.len(),
                self.classes.len()
            )));
        }
        let mut classes = self.classes.clone();
        for (class, &n) in classes.iter_mut().zip(populations) {
            class.population = n;
        }
        Network::new(classes, self.stations.clone())
    }

    /// The same network with another number of servers at a queue: the "what if it had 2
    /// or 4 CPUs" of capacity planning.
    pub fn with_servers(&self, station: &str, servers: u32) -> Result<Network, Error> {
        let mut stations = self.stations.clone();
        let names = self.station_names();
        let target = stations
            .iter_mut()
            .find(|s| s.name == station)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "--servers names station '{station}', which the model does not have (stations: {names})"
                ))
            })?;
        match &mut target.kind {
            StationKind::Queue { servers: m, .. } => *m = servers,
            StationKind::Delay => {
                return Err(Error::invalid(format!(
                    "station '{station}' is a delay (infinite servers): --servers applies to queues only"
                )))
            }
        }
        Network::new(self.classes.clone(), stations)
    }

    /// Total demand of a class over the queues and delays (its response time with no
    /// contention).
    pub fn total_demand(&self, class: usize) -> f64 {
        self.stations.iter().map(|s| s.demands[class]).sum()
    }

    fn station_names(&self) -> String {
        join_names(self.stations.iter().map(|s| s.name.as_str()))
    }
}

pub(crate) fn join_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

fn check_classes(classes: &[Class]) -> Result<(), Error> {
    if classes.is_empty() {
        return Err(Error::invalid(
            "the model has no class: add a [[class]] with a name and a population",
        ));
    }
    for (i, class) in classes.iter().enumerate() {
        check_name("class", &class.name)?;
        if classes[..i].iter().any(|c| c.name == class.name) {
            return Err(Error::invalid(format!(
                "class '{}' is defined twice: give each class its own name",
                class.name
            )));
        }
        if class.population == 0 {
            return Err(Error::invalid(format!(
                "class '{}' has population 0: a closed class needs at least one job",
                class.name
            )));
        }
        if !class.think_time.is_finite() || class.think_time < 0.0 {
            return Err(Error::invalid(format!(
                "class '{}' has think_time {}: it must be a finite number of seconds, 0 or more",
                class.name, class.think_time
            )));
        }
    }
    Ok(())
}

fn check_stations(stations: &[Station], classes: &[Class]) -> Result<(), Error> {
    if stations.is_empty() {
        return Err(Error::invalid(
            "the model has no station: add a [[station]] with a name and demands",
        ));
    }
    for (i, station) in stations.iter().enumerate() {
        check_name("station", &station.name)?;
        if stations[..i].iter().any(|s| s.name == station.name) {
            return Err(Error::invalid(format!(
                "station '{}' is defined twice: give each station its own name",
                station.name
            )));
        }
        if let StationKind::Queue { servers: 0, .. } = station.kind {
            return Err(Error::invalid(format!(
                "station '{}' has 0 servers: a queue needs at least 1 (use kind = \"delay\" for infinite servers)",
                station.name
            )));
        }
        if station.demands.len() != classes.len() {
            return Err(Error::invalid(format!(
                "station '{}' has {} demands for {} classes",
                station.name,
                station.demands.len(),
                classes.len()
            )));
        }
        for (class, &d) in classes.iter().zip(&station.demands) {
            if !d.is_finite() || d < 0.0 {
                return Err(Error::invalid(format!(
                    "station '{}': demand of class '{}' is {d}: demands are seconds per job, 0 or more",
                    station.name, class.name
                )));
            }
        }
    }
    Ok(())
}

fn check_name(what: &str, name: &str) -> Result<(), Error> {
    if name.trim().is_empty() {
        return Err(Error::invalid(format!(
            "a {what} has an empty name: give it a name"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_class() -> Network {
        Network::new(
            vec![
                Class {
                    name: "a".into(),
                    population: 2,
                    think_time: 0.0,
                },
                Class {
                    name: "b".into(),
                    population: 1,
                    think_time: 1.0,
                },
            ],
            vec![Station::new("cpu", StationKind::QUEUE, vec![0.5, 0.25])],
        )
        .unwrap()
    }

    #[test]
    fn zero_population_is_refused_with_the_class_name() {
        let err = two_class().with_populations(&[0, 1]).unwrap_err();
        assert!(
            err.to_string().contains("class 'a' has population 0"),
            "{err}"
        );
    }

    #[test]
    fn servers_override_only_applies_to_known_queues() {
        let net = two_class();
        let four = net.with_servers("cpu", 4).unwrap();
        assert_eq!(four.stations()[0].kind.servers(), Some(4));
        let err = net.with_servers("disk", 2).unwrap_err().to_string();
        assert!(
            err.contains("'disk'") && err.contains("stations: cpu"),
            "{err}"
        );
        assert!(net.with_servers("cpu", 0).is_err());
    }

    #[test]
    fn a_class_with_nothing_to_do_is_refused() {
        let err = Network::new(
            vec![Class {
                name: "idle".into(),
                population: 1,
                think_time: 0.0,
            }],
            vec![Station::new("cpu", StationKind::QUEUE, vec![0.0])],
        )
        .unwrap_err();
        assert!(err.to_string().contains("infinite"), "{err}");
    }

    #[test]
    fn class_dependence_looks_at_visiting_classes_only() {
        let mut s = Station::new(
            "cpu",
            StationKind::Queue {
                servers: 2,
                discipline: Discipline::Fcfs,
            },
            vec![0.2, 0.2 * 3.0, 0.0],
        );
        assert!(
            s.class_dependent_service(),
            "demands differ, no service times"
        );
        s.service_times = Some(vec![0.2, 0.2, 7.0]);
        assert!(
            !s.class_dependent_service(),
            "same time per visit; class 3 never visits"
        );
        assert!(s.exact_solvable());
        s.service_times = Some(vec![0.2, 0.3, 0.0]);
        assert!(!s.exact_solvable());
        s.kind = StationKind::Queue {
            servers: 2,
            discipline: Discipline::Ps,
        };
        assert!(s.exact_solvable(), "PS multi-server is product-form");
    }
}
