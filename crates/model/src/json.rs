//! The JSON shapes of `webscope model --json`, built as `serde_json` values so that the
//! per-class figures come out keyed by class name, as the issue's format has them:
//!
//! ```text
//! {"method", "classes":[{"name","population","think_time","throughput","response_time"}],
//!  "stations":[{"name","kind","servers","utilization":{class:…},"queue_length":{class:…},
//!               "residence_time":{class:…}}]}
//! ```
//!
//! A sweep is `{"method","note","results":[one such object per population]}`.

use serde_json::{json, Map, Value};

use crate::laws::Laws;
use crate::mva::{Plan, Solution, Solved};
use crate::network::StationKind;
use crate::usl::{Fit, Scalability};

/// Indented JSON text with a final newline, as the CLI prints it.
pub fn pretty(value: &Value) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
    s.push('\n');
    s
}

/// One solution.
pub fn solution(s: &Solution) -> Value {
    let names: Vec<&str> = s.classes.iter().map(|c| c.name.as_str()).collect();
    let by_class = |values: &[f64]| -> Value {
        let mut map = Map::new();
        for (name, v) in names.iter().zip(values) {
            map.insert((*name).to_string(), json!(v));
        }
        Value::Object(map)
    };
    json!({
        "method": s.method.name(),
        "iterations": s.iterations,
        "classes": s.classes.iter().map(|c| json!({
            "name": c.name,
            "population": c.population,
            "think_time": c.think_time,
            "throughput": c.throughput,
            "response_time": c.response_time,
        })).collect::<Vec<_>>(),
        "stations": s.stations.iter().map(|st| json!({
            "name": st.name,
            "kind": kind(st.kind),
            "servers": st.kind.servers(),
            "utilization": by_class(&st.utilization),
            "queue_length": by_class(&st.queue_length),
            "residence_time": by_class(&st.residence_time),
        })).collect::<Vec<_>>(),
    })
}

/// A sweep: every solution inside `results`, with the method and why it was chosen.
pub fn sweep(solved: &Solved) -> Value {
    json!({
        "method": solved.plan.method.name(),
        "note": plan_note(&solved.plan),
        "results": solved.solutions.iter().map(solution).collect::<Vec<_>>(),
    })
}

/// A single solve: the solution object with the method's note added.
pub fn single(solved: &Solved) -> Value {
    let mut value = solved
        .solutions
        .first()
        .map(solution)
        .unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("note".into(), json!(plan_note(&solved.plan)));
    }
    value
}

fn plan_note(plan: &Plan) -> &str {
    &plan.reason
}

fn kind(kind: StationKind) -> &'static str {
    match kind {
        StationKind::Delay => "delay",
        StationKind::Queue { .. } => "queue",
    }
}

/// The USL fit with the Amdahl fit under `amdahl`.
pub fn scalability(s: &Scalability) -> Value {
    let mut value = fit(&s.usl);
    if let Value::Object(map) = &mut value {
        map.insert("amdahl".into(), fit(&s.amdahl));
    }
    value
}

fn fit(f: &Fit) -> Value {
    json!({
        "sigma": f.sigma,
        "kappa": f.kappa,
        "lambda": f.lambda,
        "sigma_stderr": f.sigma_stderr,
        "kappa_stderr": f.kappa_stderr,
        "lambda_stderr": f.lambda_stderr,
        "r_squared": f.r_squared,
        "residual_std_error": f.residual_std_error,
        "n_peak": f.n_peak,
        "x_peak": f.x_peak,
        "x_limit": f.x_limit,
        "points": f.points,
    })
}

/// The operational laws' figures.
pub fn laws(throughput: f64, l: &Laws) -> Value {
    json!({
        "throughput": throughput,
        "demands": l.demands.iter().map(|d| json!({
            "name": d.name,
            "servers": d.servers,
            "demand": d.demand,
            "utilization": d.demand * throughput,
        })).collect::<Vec<_>>(),
        "total_demand": l.total_demand,
        "bottleneck": l.bottleneck,
        "throughput_limit": l.throughput_limit,
        "knee": l.knee,
        "little": l.little.map(|c| json!({
            "clients": c.clients,
            "implied": c.implied,
            "deviation": c.deviation,
        })),
        "bounds": l.bounds.iter().map(|b| json!({
            "clients": b.clients,
            "throughput_max": b.throughput_max,
            "response_time_min": b.response_time_min,
            "balanced": b.balanced.map(|[x_lo, x_hi, r_lo, r_hi]| json!({
                "throughput_min": x_lo,
                "throughput_max": x_hi,
                "response_time_min": r_lo,
                "response_time_max": r_hi,
            })),
        })).collect::<Vec<_>>(),
    })
}
