//! `webscope lab --experiment capacity --kubernetes`: each probe runs as a Job whose pods
//! are the probe's segments, through a kubectl of the test's own (`lab_support/kubectl.py`,
//! on PATH) that runs each pod's command here; the probe's report is the pods' merge.

mod capacity_support;
mod lab_support;

use capacity_support::FixedCost;
use lab_support::webscope;

#[test]
fn each_probe_can_run_as_a_kubernetes_job_whose_pods_results_are_merged() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, set, server) = FixedCost::with_set("sleep", 10.0);
    // The cluster: a kubectl of the test's on PATH that runs each pod's command here.
    let bin = tmp.path().join("bin");
    let cluster = tmp.path().join("cluster");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&cluster).unwrap();
    let kubectl = bin.join("kubectl");
    std::fs::write(&kubectl, include_str!("lab_support/kubectl.py")).unwrap();
    std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = tmp.path().join("r");
    let run = webscope()
        .args(["lab", "--target", &server.base_url, "--fileset"])
        .arg(&set)
        .arg("--out")
        .arg(&out)
        .args([
            "--experiment",
            "capacity",
            "--duration",
            "1s",
            "--no-preflight",
        ])
        // What is checked is the Job's round trip, not the capacity: the search ends within
        // a few probes whatever the machine makes of them.
        .args([
            "--slo",
            "p90<=200ms,errors<=5%,goodput>=95%",
            "--from",
            "25",
            "--precision",
            "0.5",
        ])
        .args([
            "--segments",
            "2",
            "--kubernetes",
            "registry.example/webscope:test",
        ])
        .args(["--start-margin", "700ms", "-q"])
        .env("PATH", path)
        .env("FAKE_KUBECTL_STATE", &cluster)
        .env("FAKE_KUBECTL_WEBSCOPE", env!("CARGO_BIN_EXE_webscope"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let probes = report["capacity"]["probes"].as_array().unwrap();
    assert!(!probes.is_empty());
    let calls = std::fs::read_to_string(cluster.join("calls")).unwrap();
    for probe in probes {
        let name = probe["run"].as_str().unwrap();
        let job = format!("webscope-{name}");
        // Applied, waited for, its logs taken, deleted: in that order.
        let at = |what: &str| {
            calls
                .find(&what.replace("JOB", &job))
                .unwrap_or_else(|| panic!("no {what} for {job}:\n{calls}"))
        };
        let steps = [
            at("get job JOB -o json"),
            at("logs -l job-name=JOB"),
            at("delete job JOB"),
        ];
        assert!(steps.windows(2).all(|w| w[0] < w[1]), "{calls}");
        assert!(cluster.join(&job).join("deleted").exists());
        // Each pod ran its segment; the probe's report is their merge.
        let dir = out.join("capacity").join(name);
        let pods = std::fs::read_to_string(dir.join("pods.log")).unwrap();
        for i in 0..2 {
            assert!(pods.contains(&format!("[pod/{job}-{i}-")), "{pods}");
        }
        let load = &serde_json::from_slice::<serde_json::Value>(
            &std::fs::read(dir.join("run.json")).unwrap(),
        )
        .unwrap()["load"];
        assert_eq!(load["threads"], 2, "{load:#}");
        assert!(load["requests"].as_u64().unwrap() > 0, "{load:#}");
        assert!(dir.join("load.hlog").exists());
    }
    assert_eq!(calls.matches("apply -f -").count(), probes.len(), "{calls}");
}
