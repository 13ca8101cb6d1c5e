//! Operational laws and bounds: what measured figures imply before any queueing model.
//!
//! - Service demand law: D_k = U_k / X (seconds of resource k per completed request).
//! - Little's law (interactive form): N = X (R + Z); the deviation of a measurement from
//!   it says whether the run was steady and the figures consistent.
//! - Asymptotic bounds (Lazowska et al., ch. 5): X(N) ≤ min(N / (D + Z), min_k m_k / D_k),
//!   R(N) ≥ max(D, N · max_k (D_k / m_k) − Z), and the knee N* = (D + Z) / D_max where the
//!   two throughput bounds cross.
//! - Balanced job bounds (single-server queues only), tighter than the asymptotic ones:
//!   N / (D + Z + (N−1) D_max / (1 + Z/(N D))) ≤ X(N) ≤ N / (D + Z + (N−1) D_avg / (1 + Z/D)).

use crate::{Class, Discipline, Error, Network, Station, StationKind};

/// D = U / X: seconds of a resource per completed request, from its utilisation (busy
/// fraction, or busy servers for a multi-server resource) and the throughput.
pub fn service_demand(utilization: f64, throughput: f64) -> Result<f64, Error> {
    if !(throughput.is_finite() && throughput > 0.0) {
        return Err(Error::invalid(format!(
            "throughput {throughput} must be a positive number of completions per second"
        )));
    }
    if !(utilization.is_finite() && utilization >= 0.0) {
        return Err(Error::invalid(format!(
            "utilisation {utilization} must be 0 or more"
        )));
    }
    Ok(utilization / throughput)
}

/// A measured resource: its name, utilisation and servers.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Name (cpu, disk ...).
    pub name: String,
    /// Measured utilisation: busy fraction of one server, or busy servers in total when
    /// `servers` > 1 (a 2-core CPU 60 % busy on both cores is 1.2).
    pub utilization: f64,
    /// Identical servers (cores, spindles).
    pub servers: u32,
}

/// Figures measured over one steady interval of a closed-loop run.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Completions per second (X).
    pub throughput: f64,
    /// The resources and their utilisations.
    pub resources: Vec<Resource>,
    /// Clients (N), if known.
    pub clients: Option<f64>,
    /// Mean response time (s), if known.
    pub response_time: Option<f64>,
    /// Think time per client between requests (s).
    pub think_time: f64,
}

/// A resource's demand.
#[derive(Debug, Clone, PartialEq)]
pub struct Demand {
    /// Resource name.
    pub name: String,
    /// Seconds per request, D = U / X.
    pub demand: f64,
    /// Servers.
    pub servers: u32,
}

/// Little's law checked on measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LittleCheck {
    /// Clients measured (N).
    pub clients: f64,
    /// X (R + Z): the clients the throughput and response time imply.
    pub implied: f64,
    /// (implied − N) / N.
    pub deviation: f64,
}

/// Bounds on throughput and response time at one population.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Population.
    pub clients: f64,
    /// Asymptotic upper bound on throughput.
    pub throughput_max: f64,
    /// Asymptotic lower bound on response time.
    pub response_time_min: f64,
    /// Balanced-job bounds (throughput lower, throughput upper, response time lower,
    /// response time upper), when every resource has one server.
    pub balanced: Option<[f64; 4]>,
}

/// Everything the laws say about a measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Laws {
    /// Demands in the order measured.
    pub demands: Vec<Demand>,
    /// Sum of the demands: the response time with no queueing (D).
    pub total_demand: f64,
    /// The resource with the largest demand per server.
    pub bottleneck: String,
    /// The throughput no population can exceed: min_k m_k / D_k.
    pub throughput_limit: f64,
    /// N* = (D + Z) / max_k (D_k / m_k): beyond it, more clients only queue.
    pub knee: f64,
    /// Little's law on the measurement, when clients and response time were given.
    pub little: Option<LittleCheck>,
    /// Bounds at the requested populations.
    pub bounds: Vec<Bounds>,
}

impl Laws {
    /// A one-class closed network with these demands (each resource a queue with its
    /// servers; a multi-server CPU is processor-shared), `clients` jobs and `think_time`:
    /// the model of the measured system, to solve at other populations with [`crate::mva`].
    pub fn network(&self, clients: u32, think_time: f64) -> Result<Network, Error> {
        let stations = self
            .demands
            .iter()
            .map(|d| {
                Station::new(
                    d.name.clone(),
                    StationKind::Queue {
                        servers: d.servers,
                        discipline: Discipline::Ps,
                    },
                    vec![d.demand],
                )
            })
            .collect();
        let class = Class {
            name: "requests".into(),
            population: clients,
            think_time,
        };
        Network::new(vec![class], stations)
    }
}

/// Applies the laws to a measurement; `populations` are the N to bound (the measured
/// clients are added when given).
pub fn analyze(measured: &Measured, populations: &[f64]) -> Result<Laws, Error> {
    if measured.resources.is_empty() {
        return Err(Error::invalid(
            "no resource utilisation given: add at least one (e.g. --util cpu=0.39)",
        ));
    }
    if !(measured.think_time.is_finite() && measured.think_time >= 0.0) {
        return Err(Error::invalid(format!(
            "think time {} must be 0 or more seconds",
            measured.think_time
        )));
    }
    let mut demands = Vec::with_capacity(measured.resources.len());
    for r in &measured.resources {
        if r.servers == 0 {
            return Err(Error::invalid(format!(
                "resource '{}' has 0 servers: give 1 or more",
                r.name
            )));
        }
        if r.utilization > f64::from(r.servers) * 1.0001 {
            return Err(Error::invalid(format!(
                "resource '{}' is {} busy but has {} server(s): a utilisation cannot exceed the servers (give it as a fraction, or set its servers)",
                r.name, r.utilization, r.servers
            )));
        }
        demands.push(Demand {
            name: r.name.clone(),
            demand: service_demand(r.utilization, measured.throughput)
                .map_err(|e| Error::invalid(format!("resource '{}': {e}", r.name)))?,
            servers: r.servers,
        });
    }
    let total_demand: f64 = demands.iter().map(|d| d.demand).sum();
    let (bottleneck, per_server) = demands
        .iter()
        .map(|d| (d, d.demand / f64::from(d.servers)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(d, v)| (d.name.clone(), v))
        .unwrap_or_default();
    if per_server <= 0.0 {
        return Err(Error::invalid(
            "every utilisation is 0: nothing bounds the throughput (measure a busy resource)",
        ));
    }
    let little = match (measured.clients, measured.response_time) {
        (Some(n), Some(r)) => Some(little_check(
            n,
            measured.throughput,
            r,
            measured.think_time,
        )?),
        _ => None,
    };
    let mut ns: Vec<f64> = populations.to_vec();
    if let Some(n) = measured.clients {
        if !ns.contains(&n) {
            ns.push(n);
        }
    }
    let bounds = ns
        .iter()
        .map(|&n| bounds(&demands, measured.think_time, n))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Laws {
        total_demand,
        bottleneck,
        throughput_limit: 1.0 / per_server,
        knee: (total_demand + measured.think_time) / per_server,
        little,
        bounds,
        demands,
    })
}

/// Little's law N = X (R + Z) on measured figures.
pub fn little_check(
    clients: f64,
    throughput: f64,
    response_time: f64,
    think_time: f64,
) -> Result<LittleCheck, Error> {
    if !(clients.is_finite() && clients > 0.0) {
        return Err(Error::invalid(format!(
            "clients {clients} must be a positive number"
        )));
    }
    if !(response_time.is_finite() && response_time >= 0.0) {
        return Err(Error::invalid(format!(
            "response time {response_time} must be 0 or more seconds"
        )));
    }
    let implied = throughput * (response_time + think_time);
    Ok(LittleCheck {
        clients,
        implied,
        deviation: (implied - clients) / clients,
    })
}

/// Asymptotic and (single-server) balanced-job bounds at population `n`.
pub fn bounds(demands: &[Demand], think_time: f64, n: f64) -> Result<Bounds, Error> {
    if !(n.is_finite() && n >= 1.0) {
        return Err(Error::invalid(format!("population {n} must be at least 1")));
    }
    let d: f64 = demands.iter().map(|x| x.demand).sum();
    let per_server = demands
        .iter()
        .map(|x| x.demand / f64::from(x.servers))
        .fold(0.0, f64::max);
    let z = think_time;
    let throughput_max = (n / (d + z)).min(1.0 / per_server);
    let response_time_min = d.max(n * per_server - z);
    let balanced = demands.iter().all(|x| x.servers == 1).then(|| {
        let d_max = per_server;
        let d_avg = d / demands.len() as f64;
        let x_low = n / (d + z + (n - 1.0) * d_max / (1.0 + z / (n * d)));
        let x_high = (1.0 / d_max).min(n / (d + z + (n - 1.0) * d_avg / (1.0 + z / d)));
        let r_low = (n * d_max - z).max(d + (n - 1.0) * d_avg / (1.0 + z / d));
        let r_high = d + (n - 1.0) * d_max / (1.0 + z / (n * d));
        [x_low, x_high, r_low, r_high]
    });
    Ok(Bounds {
        clients: n,
        throughput_max,
        response_time_min,
        balanced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> Measured {
        // The paper's section 3: 1204 requests in 30 minutes, CPU 38.99 %, disk 2.1575 %
        // while serving the PDF.
        Measured {
            throughput: 1204.0 / 1800.0,
            resources: vec![
                Resource {
                    name: "cpu".into(),
                    utilization: 0.3899,
                    servers: 1,
                },
                Resource {
                    name: "disk".into(),
                    utilization: 0.021575,
                    servers: 1,
                },
            ],
            clients: None,
            response_time: None,
            think_time: 0.0,
        }
    }

    #[test]
    fn demands_are_utilisation_over_throughput_as_in_the_paper() {
        let laws = analyze(&measured(), &[]).unwrap();
        // The paper prints D_cpu = .583052311 and D_disk = .032254983 (from X0 = .6689).
        assert!((laws.demands[0].demand - 0.3899 / 0.6689).abs() < 2e-4);
        assert!((laws.demands[0].demand - 0.583052311).abs() / 0.583 < 1e-3);
        assert!((laws.demands[1].demand - 0.032254983).abs() / 0.0323 < 1e-3);
        assert_eq!(laws.bottleneck, "cpu");
        assert!((laws.throughput_limit - 1.0 / laws.demands[0].demand).abs() < 1e-12);
        // No think time: the knee is D / D_max.
        assert!((laws.knee - laws.total_demand / laws.demands[0].demand).abs() < 1e-12);
    }

    #[test]
    fn little_deviation_is_relative_to_the_clients() {
        // 50 clients, 400 req/s, 100 ms response, 25 ms think: X (R + Z) = 50 exactly.
        let ok = little_check(50.0, 400.0, 0.1, 0.025).unwrap();
        assert!((ok.implied - 50.0).abs() < 1e-9 && ok.deviation.abs() < 1e-12);
        // Half the throughput: the figures imply 25 clients, a -50 % deviation.
        let off = little_check(50.0, 200.0, 0.1, 0.025).unwrap();
        assert!((off.deviation + 0.5).abs() < 1e-12);
    }

    #[test]
    fn bounds_by_hand() {
        // Three single-server centres, D = 0.2, 0.1, 0.1 (D = 0.4, D_max = 0.2), Z = 1.
        let demands: Vec<Demand> = [0.2, 0.1, 0.1]
            .iter()
            .map(|&d| Demand {
                name: "x".into(),
                demand: d,
                servers: 1,
            })
            .collect();
        let b = bounds(&demands, 1.0, 10.0).unwrap();
        // min(10 / 1.4, 1 / 0.2) = 5; max(0.4, 10 · 0.2 − 1) = 1.
        assert!((b.throughput_max - 5.0).abs() < 1e-12);
        assert!((b.response_time_min - 1.0).abs() < 1e-12);
        let [x_low, x_high, r_low, r_high] = b.balanced.unwrap();
        // X ≥ 10 / (1.4 + 9 · 0.2 / (1 + 1/4)) = 10 / 2.84; X ≤ min(5, 10 / (1.4 + 9 · (0.4/3) / (1 + 2.5))).
        assert!((x_low - 10.0 / 2.84).abs() < 1e-12);
        assert!((x_high - (10.0f64 / (1.4 + 9.0 * (0.4 / 3.0) / 3.5)).min(5.0)).abs() < 1e-12);
        assert!((r_high - (0.4 + 9.0 * 0.2 / 1.25)).abs() < 1e-12);
        assert!((r_low - 1.0f64.max(0.4 + 9.0 * (0.4 / 3.0) / 3.5)).abs() < 1e-12);
        assert!(x_low <= x_high && r_low <= r_high);
        // A multi-server resource: no balanced bounds, and m / D limits throughput.
        let two = vec![Demand {
            name: "cpu".into(),
            demand: 0.5,
            servers: 2,
        }];
        let b = bounds(&two, 0.0, 100.0).unwrap();
        assert!(b.balanced.is_none());
        assert!((b.throughput_max - 4.0).abs() < 1e-12);
    }

    #[test]
    fn measured_demands_become_a_model_whose_curve_obeys_the_laws() {
        let laws = analyze(&measured(), &[]).unwrap();
        let network = laws.network(1, 0.0).unwrap();
        let ns: Vec<u32> = vec![1, 2, 5, 20, 100];
        let (plan, curve) =
            crate::mva::curve(&network, &ns, &crate::mva::Options::default()).unwrap();
        assert_eq!(plan.method, crate::mva::Method::Exact);
        // One client never queues: X(1) = 1 / D.
        assert!((curve[0].throughput - 1.0 / laws.total_demand).abs() < 1e-12);
        for (p, &n) in curve.iter().zip(&ns) {
            let b = bounds(&laws.demands, 0.0, f64::from(n)).unwrap();
            assert!(p.throughput <= b.throughput_max * (1.0 + 1e-12));
            assert!(p.response_time >= b.response_time_min * (1.0 - 1e-12));
        }
        assert!(curve[4].throughput > 0.99 * laws.throughput_limit);
    }

    #[test]
    fn impossible_measurements_are_refused() {
        let mut m = measured();
        m.resources[0].utilization = 1.5;
        assert!(analyze(&m, &[])
            .unwrap_err()
            .to_string()
            .contains("cannot exceed"));
        let mut m = measured();
        m.throughput = 0.0;
        assert!(analyze(&m, &[])
            .unwrap_err()
            .to_string()
            .contains("throughput"));
        let mut m = measured();
        m.resources.clear();
        assert!(analyze(&m, &[]).is_err());
    }
}
