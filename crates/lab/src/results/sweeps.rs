//! The sweeps' entries in report.json (clients, saturation, filesize, model, techniques,
//! protocols) and the runs a sweep lists: typed, so that their keys are spelt once and what
//! a page wrote reads back. The pages (`webscope_pages`) fill them; nothing here decides or
//! draws. Units are in the field names, as the keys have always had them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use webscope_bottleneck::Bound;
use webscope_monitor::kernel::Retransmitting;

/// One run of a sweep (report.json's `runs`): the figures of the page's table, unrounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRun {
    /// Responses with an expected status, per second.
    pub goodput_per_s: f64,
    /// Every response, per second.
    pub responses_per_s: f64,
    /// Bytes received, Mbit/s.
    pub mbit_s: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th-percentile latency, ms.
    pub p99_ms: f64,
    /// Server CPU time per request, ms (none without the server's figures).
    pub server_ms: Option<f64>,
    /// Unexpected responses and failures over attempts.
    pub error_share: f64,
    /// Unexpected statuses and how many of each.
    pub errors: BTreeMap<String, u64>,
    /// Whether the run is valid.
    pub valid: bool,
    /// Why it is not.
    pub invalid_because: Option<String>,
    /// What bounds it (valid runs only).
    pub bound: Option<Bound>,
    /// Its verdict in words (valid runs only).
    pub verdict: Option<String>,
    /// The run's directory name.
    pub run: String,
    /// Valid runs behind it (`--repeat`).
    pub repeats: usize,
    /// Lowest goodput of the repeats, when there were several.
    pub goodput_min: Option<f64>,
    /// Highest goodput of the repeats.
    pub goodput_max: Option<f64>,
    /// The accept-queue wait, the connections' lifetimes, TIME_WAIT and retransmits, where
    /// the kernel module measured them (absent otherwise, so a lab without it keeps its
    /// report.json).
    #[serde(flatten)]
    pub kernel: KernelFigures,
    /// The run's x under the name the sweep varies (`clients`, `files`, ...): one key. After
    /// `kernel`, which takes its keys first: a flattened map takes every key left.
    #[serde(flatten)]
    pub x: BTreeMap<String, f64>,
}

/// A run's figures from the monitor's kernel module, each absent where not measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelFigures {
    /// Median wait in the accept queue, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_wait_p50_ms: Option<f64>,
    /// 99th-percentile wait in the accept queue, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_wait_p99_ms: Option<f64>,
    /// Accept-queue wait per request, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_wait_per_request_ms: Option<f64>,
    /// Connections whose lifetime was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetimes: Option<u64>,
    /// Median connection lifetime, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_p50_ms: Option<f64>,
    /// 99th-percentile connection lifetime, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_p99_ms: Option<f64>,
    /// Median lifetime from the SYN, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_from_syn_p50_ms: Option<f64>,
    /// 99th-percentile lifetime from the SYN, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_from_syn_p99_ms: Option<f64>,
    /// Connections the server closed into TIME_WAIT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_wait_entered: Option<u64>,
    /// TIME_WAIT sockets whose 60 s ran out during the run (earlier runs' included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_wait_expired: Option<u64>,
    /// TIME_WAIT sockets cut short by a new SYN on their address pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_wait_cut: Option<u64>,
    /// TIME_WAIT sockets ended by an RST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_wait_reset: Option<u64>,
    /// Median time in TIME_WAIT of those that ended, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_in_time_wait_p50_ms: Option<f64>,
    /// 99th-percentile time in TIME_WAIT, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_in_time_wait_p99_ms: Option<f64>,
    /// Segments the server's port retransmitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrans_segs: Option<u64>,
    /// The connections that retransmitted most, most first (at most ten, as the monitor
    /// keeps them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub most_retransmitting: Vec<Retransmitting>,
}

/// `report.json`'s `clients`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientsEntry {
    /// Clients at the knee.
    pub knee_clients: Option<f64>,
    /// The highest goodput, requests/s.
    pub max_requests_per_s: Option<f64>,
    /// The sweep in words.
    pub reading: Option<String>,
    /// The Universal Scalability Law fitted to the runs.
    pub usl: Option<UslEntry>,
    /// Every run.
    pub runs: Vec<SweepRun>,
}

/// The USL's fit as report.json keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UslEntry {
    /// Contention.
    pub sigma: f64,
    /// Coherency.
    pub kappa: f64,
    /// Throughput of one client, requests/s.
    pub lambda: f64,
    /// The fit's R².
    pub r_squared: f64,
    /// Clients at the peak (none when κ is 0).
    pub n_peak: Option<f64>,
    /// Throughput at the peak, requests/s.
    pub x_peak: Option<f64>,
}

/// `report.json`'s `saturation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaturationEntry {
    /// Clients after which the mean response time doubles with them.
    pub knee_clients: Option<usize>,
    /// Why the doubling stopped, in words.
    pub stopped_because: String,
    /// The sweep in words.
    pub reading: String,
}

/// `report.json`'s `filesize`: the line fitted to mean response time against file size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilesizeEntry {
    /// The line's intercept: a connection's fixed cost, ms.
    pub fixed_cost_ms: f64,
    /// Its slope, ms per KB.
    pub per_kb_ms: f64,
}

/// `report.json`'s `model`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    /// The service demands, seconds per request.
    pub demands_s: ServiceDemands,
    /// MVA's mean throughput error, per cent.
    pub mva_throughput_error_pct_mean: f64,
    /// MVA's mean response-time error, per cent.
    pub mva_response_time_error_pct_mean: f64,
    /// The USL's mean throughput error, per cent (none without a fit).
    pub usl_throughput_error_pct_mean: Option<f64>,
    /// The model's ceiling on 1, 2 and 4 CPUs, requests/s.
    pub ceiling_requests_per_s: Ceilings,
    /// The model in words.
    pub reading: String,
}

/// Service demands, seconds per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceDemands {
    /// The server's CPU.
    pub server_cpu: f64,
    /// The load generator.
    pub generator: f64,
    /// The disk.
    pub disk: f64,
    /// Pure delay.
    pub delay: f64,
}

/// A ceiling per number of CPUs, keyed by that number as report.json has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// On one CPU.
    #[serde(rename = "1")]
    pub one: f64,
    /// On two.
    #[serde(rename = "2")]
    pub two: f64,
    /// On four.
    #[serde(rename = "4")]
    pub four: f64,
}

/// `report.json`'s `techniques`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TechniquesEntry {
    /// The steps in words.
    pub reading: String,
    /// Each step, cumulative.
    pub steps: Vec<TechniqueStep>,
}

/// One technique step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TechniqueStep {
    /// The step's label.
    pub step: String,
    /// Goodput, requests/s.
    pub requests_per_s: f64,
    /// Server CPU time per request, µs.
    pub cpu_us_per_request: Option<f64>,
    /// 99th-percentile latency, ms.
    pub p99_ms: f64,
    /// The server's syscalls per request, where traced.
    pub syscalls_per_request: Option<f64>,
}

/// `report.json`'s `protocols`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtocolsEntry {
    /// The rows in words.
    pub reading: String,
    /// One per protocol.
    pub rows: Vec<ProtocolRow>,
}

/// One protocol's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtocolRow {
    /// The protocol's label (`HTTP/1.1`, `HTTPS close`, ...).
    pub protocol: String,
    /// Goodput, requests/s.
    pub requests_per_s: f64,
    /// Server CPU time per request, µs.
    pub cpu_us_per_request: Option<f64>,
    /// 99th-percentile latency, ms.
    pub p99_ms: f64,
    /// TLS handshakes the clients made.
    pub handshakes: Option<Handshakes>,
    /// Mean handshake, µs.
    pub handshake_mean_us: Option<f64>,
    /// Handshakes' share of the clients' time, per cent.
    pub handshake_share_pct: Option<f64>,
    /// What bounds the run, or why it is invalid.
    pub bound: String,
}

/// TLS handshakes by kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Handshakes {
    /// Full handshakes.
    pub full: u64,
    /// Resumed ones.
    pub resumed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries as the stored lab of `report_stored` (crates/webscope/tests/data) has them.
    const STORED_RUN: &str = r#"{"bound": "latency", "clients": 1.0, "error_share": 0.0, "errors": {}, "goodput_max": null, "goodput_min": null, "goodput_per_s": 2820.0, "invalid_because": null, "mbit_s": 307.374336, "p50_ms": 0.185471, "p99_ms": 3.1006709999999997, "repeats": 1, "responses_per_s": 2820.0, "run": "clients-001", "server_ms": 0.0538438511166253, "valid": true, "verdict": "no resource is at its limit"}"#;
    const STORED_MODEL: &str = r#"{"ceiling_requests_per_s": {"1": 4394.12798548516, "2": 4394.12798548516, "4": 4394.12798548516}, "demands_s": {"delay": 0.0010842711902117144, "disk": 0.00022757643912585968, "generator": 8.259044819038175e-05, "server_cpu": 8.924144769459602e-05}, "mva_response_time_error_pct_mean": 16.09368179567714, "mva_throughput_error_pct_mean": 21.172608810451315, "reading": "Exact MVA", "usl_throughput_error_pct_mean": 4.324501219416133}"#;
    const STORED_PROTOCOL: &str = r#"{"bound": "generator", "cpu_us_per_request": 1083.844580777096, "handshake_mean_us": 27751.610181818163, "handshake_share_pct": 40.609780200836916, "handshakes": {"full": 20, "resumed": 464}, "p99_ms": 56.721407, "protocol": "HTTPS close", "requests_per_s": 484.0}"#;

    fn back<T: Serialize + serde::de::DeserializeOwned>(t: &T) -> (T, serde_json::Value) {
        let v = serde_json::to_value(t).unwrap();
        (serde_json::from_value(v.clone()).unwrap(), v)
    }

    #[test]
    fn stored_entries_read_into_their_types_and_write_back_the_same_keys() {
        let run: SweepRun = serde_json::from_str(STORED_RUN).unwrap();
        assert_eq!(run.x["clients"], 1.0);
        assert_eq!(run.bound, Some(Bound::Latency));
        assert_eq!(run.kernel, KernelFigures::default());
        let stored: serde_json::Value = serde_json::from_str(STORED_RUN).unwrap();
        assert_eq!(serde_json::to_value(&run).unwrap(), stored);

        let model: ModelEntry = serde_json::from_str(STORED_MODEL).unwrap();
        assert_eq!(model.ceiling_requests_per_s.four, 4394.12798548516);
        assert_eq!(model.demands_s.server_cpu, 8.924144769459602e-05);
        let stored: serde_json::Value = serde_json::from_str(STORED_MODEL).unwrap();
        assert_eq!(serde_json::to_value(&model).unwrap(), stored);

        let row: ProtocolRow = serde_json::from_str(STORED_PROTOCOL).unwrap();
        let hs = row.handshakes.unwrap();
        assert_eq!((hs.full, hs.resumed), (20, 464));
    }

    #[test]
    fn a_run_with_kernel_figures_reads_back_equal_and_one_without_has_no_such_keys() {
        let mut run: SweepRun = serde_json::from_str(STORED_RUN).unwrap();
        run.kernel.lifetimes = Some(412);
        run.kernel.accept_wait_p99_ms = Some(1.5);
        run.kernel.time_wait_cut = Some(7);
        run.kernel.time_in_time_wait_p99_ms = Some(61_236.8);
        run.kernel.most_retransmitting = vec![Retransmitting {
            local: "127.0.0.1:8080".parse().unwrap(),
            peer: "[::1]:40001".parse().unwrap(),
            retrans: 12,
        }];
        let (again, v) = back(&run);
        assert_eq!(
            again, run,
            "a list of connections beside the flattened x: {v}"
        );
        assert_eq!(v["lifetimes"], 412);
        assert_eq!(v["most_retransmitting"][0]["peer"], "[::1]:40001");
        assert!(v.get("lifetime_p50_ms").is_none(), "{v}");
        // The x is one key of the run's own, not a map under a name.
        assert!(v.get("x").is_none() && v["clients"] == 1.0, "{v}");
    }

    #[test]
    fn every_sweep_entry_reads_back_equal() {
        let clients = ClientsEntry {
            knee_clients: Some(8.0),
            max_requests_per_s: Some(9000.0),
            reading: Some("It grows.".into()),
            usl: Some(UslEntry {
                sigma: 0.1,
                kappa: 0.0,
                lambda: 600.0,
                r_squared: 0.99,
                n_peak: None,
                x_peak: None,
            }),
            runs: vec![serde_json::from_str(STORED_RUN).unwrap()],
        };
        assert_eq!(back(&clients).0, clients);
        let saturation = SaturationEntry {
            knee_clients: Some(8),
            stopped_because: "the cap of 32 clients".into(),
            reading: "It doubles.".into(),
        };
        let (again, v) = back(&saturation);
        assert_eq!(again, saturation);
        assert!(
            v["knee_clients"].is_u64(),
            "a count of clients stays an integer: {v}"
        );
        let filesize = FilesizeEntry {
            fixed_cost_ms: 0.7,
            per_kb_ms: 0.004,
        };
        assert_eq!(back(&filesize).0, filesize);
        let techniques = TechniquesEntry {
            reading: "Faster.".into(),
            steps: vec![TechniqueStep {
                step: "+sendfile".into(),
                requests_per_s: 18130.0,
                cpu_us_per_request: Some(36.4),
                p99_ms: 7.0,
                syscalls_per_request: None,
            }],
        };
        assert_eq!(back(&techniques).0, techniques);
        let protocols = ProtocolsEntry {
            reading: "TLS costs.".into(),
            rows: vec![serde_json::from_str(STORED_PROTOCOL).unwrap()],
        };
        assert_eq!(back(&protocols).0, protocols);
        let model: ModelEntry = serde_json::from_str(STORED_MODEL).unwrap();
        assert_eq!(back(&model).0, model);
    }
}
