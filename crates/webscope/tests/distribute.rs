//! `webscope distribute --kubernetes N`: the Indexed Job parsed back and checked field by
//! field against the part of the Kubernetes Job API it uses; then its pods played here: each
//! pod's command (the index substituted as Kubernetes would) run against `webscope serve`, its
//! output prefixed as `kubectl logs --prefix` prints it, and `webscope merge` on those logs.

mod lab_support;

use std::process::Stdio;

use lab_support::{webscope, Served};
use serde_json::{json, Value};

/// The fields of the Job API (batch/v1) that a manifest may use here, by path; `[]` marks a
/// list's items. Transcribed from the Kubernetes API reference for Job, PodTemplateSpec,
/// PodSpec, Affinity, Container, EnvVar and ResourceRequirements.
const ALLOWED: &[(&str, &[&str])] = &[
    ("", &["apiVersion", "kind", "metadata", "spec"]),
    ("metadata", &["name", "namespace", "labels", "annotations"]),
    (
        "spec",
        &[
            "completionMode",
            "completions",
            "parallelism",
            "backoffLimit",
            "activeDeadlineSeconds",
            "ttlSecondsAfterFinished",
            "template",
        ],
    ),
    ("spec.template", &["metadata", "spec"]),
    ("spec.template.metadata", &["labels", "annotations"]),
    (
        "spec.template.spec",
        &["restartPolicy", "affinity", "containers", "nodeSelector", "tolerations"],
    ),
    ("spec.template.spec.affinity", &["podAntiAffinity", "podAffinity", "nodeAffinity"]),
    (
        "spec.template.spec.affinity.podAntiAffinity",
        &[
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        ],
    ),
    (
        "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[]",
        &["labelSelector", "topologyKey", "namespaces"],
    ),
    (
        "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].labelSelector",
        &["matchLabels", "matchExpressions"],
    ),
    (
        "spec.template.spec.containers[]",
        &["name", "image", "command", "args", "env", "resources", "imagePullPolicy"],
    ),
    ("spec.template.spec.containers[].env[]", &["name", "value", "valueFrom"]),
    ("spec.template.spec.containers[].env[].valueFrom", &["fieldRef"]),
    ("spec.template.spec.containers[].env[].valueFrom.fieldRef", &["fieldPath", "apiVersion"]),
    ("spec.template.spec.containers[].resources", &["requests", "limits"]),
];

/// Maps whose keys are free (labels, resource names).
const FREE: &[&str] = &[
    "metadata.labels",
    "spec.template.metadata.labels",
    "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].labelSelector.matchLabels",
    "spec.template.spec.containers[].resources.requests",
    "spec.template.spec.containers[].resources.limits",
];

fn check_fields(value: &Value, path: &str) {
    match value {
        Value::Object(map) => {
            if FREE.contains(&path) {
                return;
            }
            let allowed = ALLOWED
                .iter()
                .find(|(p, _)| *p == path)
                .unwrap_or_else(|| panic!("{path} is not an object in a Job"))
                .1;
            for (key, child) in map {
                assert!(
                    allowed.contains(&key.as_str()),
                    "{path}.{key} is not a Job field"
                );
                let next = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                check_fields(child, &next);
            }
        }
        Value::Array(items) => {
            for item in items {
                check_fields(item, &format!("{path}[]"));
            }
        }
        _ => {}
    }
}

/// The Job of the first test, as flags.
const JOB: &[&str] = &[
    "--kubernetes",
    "4",
    "--image",
    "reg.example/webscope:1",
    "--cpu",
    "2",
    "--memory",
    "1Gi",
    "--",
    "http://web.prod.svc/",
    "-c",
    "400",
    "-d",
    "60s",
];

fn manifest(args: &[&str]) -> Value {
    let out = webscope().arg("distribute").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("kubectl logs -l job-name="));
    serde_yaml_ng::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_job_is_an_indexed_job_of_n_pods_on_distinct_nodes_with_whole_cores() {
    let job = manifest(JOB);
    check_fields(&job, "");
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 4);
    assert_eq!(spec["parallelism"], 4);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let term =
        &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(term["topologyKey"], "kubernetes.io/hostname");
    assert_eq!(
        term["labelSelector"]["matchLabels"],
        spec["template"]["metadata"]["labels"]
    );
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "reg.example/webscope:1");
    assert_eq!(
        container["resources"]["requests"],
        container["resources"]["limits"]
    );
    assert_eq!(
        container["resources"]["requests"],
        json!({"cpu": "2", "memory": "1Gi"})
    );
    assert_eq!(container["env"][0]["name"], "JOB_COMPLETION_INDEX");
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        &args[..6],
        ["load", "http://web.prod.svc/", "-c", "400", "-d", "60s"]
    );
    let at = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
    assert_eq!(at("--segment"), "$(JOB_COMPLETION_INDEX)/4");
    assert!(at("--start-at").ends_with('Z'));
    assert!(args.contains(&"--emit"));
    // JSON on request, the same Job.
    let as_json = webscope()
        .arg("distribute")
        .args(["--format", "json"])
        .args(JOB)
        .output()
        .unwrap();
    let mut from_json: Value = serde_json::from_slice(&as_json.stdout).unwrap();
    let mut from_yaml = job.clone();
    // Only the start time differs (written a moment apart).
    for j in [&mut from_json, &mut from_yaml] {
        j["spec"]["template"]["spec"]["containers"][0]["args"][9] = json!("T");
    }
    assert_eq!(from_json, from_yaml);
}

#[test]
fn the_pods_commands_run_here_and_their_logs_merge() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("index.html"), "pods\n").unwrap();
    let server = Served::start(tmp.path());
    let url = format!("{}index.html", server.base_url);
    let job = manifest(&[
        "--kubernetes",
        "3",
        "--start-margin",
        "2s",
        "--",
        &url,
        "-c",
        "6",
        "-t",
        "1",
        "-d",
        "1s",
    ]);
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["command"][0], "webscope");
    let logs = play(container, 3);
    let log = tmp.path().join("pods.log");
    std::fs::write(&log, logs).unwrap();
    let out = webscope()
        .arg("merge")
        .arg(tmp.path().join("m"))
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("m/load.json")).unwrap()).unwrap();
    assert!(merged["requests"].as_u64().unwrap() > 0);
    assert_eq!(merged["connections"], 6);
    assert_eq!(merged["generators"].as_array().unwrap().len(), 3);
}

/// A container argument as Kubernetes expands it: `$(NAME)` of a defined variable to its
/// value, `$$` to `$`, anything else as written.
fn expand(arg: &str, index: usize) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some(after) = rest.strip_prefix("$(JOB_COMPLETION_INDEX)") {
            out.push_str(&index.to_string());
            rest = after;
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out + rest
}

/// Runs the Job's `pods` pods here (each its container's command, expanded as Kubernetes
/// would) and returns their output as `kubectl logs --prefix` prints it.
fn play(container: &Value, pods: usize) -> String {
    let children: Vec<_> = (0..pods)
        .map(|i| {
            let args: Vec<String> = container["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| expand(a.as_str().unwrap(), i))
                .collect();
            webscope()
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut logs = String::new();
    for (i, pod) in children.into_iter().enumerate() {
        let out = pod.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            logs.push_str(&format!("[pod/webscope-load-{i}-x/load] {line}\n"));
        }
    }
    logs
}

/// A config file (as the lab writes one per probe) goes into the Job whole, as the pods'
/// `--config` argument, and the pods run it: the config reaches them though no file does.
#[test]
fn a_config_goes_into_the_job_whole_and_its_pods_run_it() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("index.html"), "pods\n").unwrap();
    let server = Served::start(tmp.path());
    let url = format!("{}index.html", server.base_url);
    let mut config = webscope_load::Config::new(webscope_load::Target::url(&url).unwrap());
    config.connections = 6;
    config.duration = std::time::Duration::from_secs(1);
    config.seed = 7;
    // Kubernetes would expand this in an argument unless the Job escapes it.
    config.headers = vec!["X-Pod: $(JOB_COMPLETION_INDEX)".into()];
    let file = tmp.path().join("load-config.json");
    std::fs::write(&file, config.to_json().unwrap()).unwrap();
    let job = manifest(&[
        "--kubernetes",
        "3",
        "--start-margin",
        "2s",
        "--",
        "--config",
        file.to_str().unwrap(),
    ]);
    check_fields(&job, "");
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let args = container["args"].as_array().unwrap();
    let at = args.iter().position(|a| a == "--config").unwrap();
    let given = webscope_load::Config::from_json(&expand(args[at + 1].as_str().unwrap(), 0));
    assert_eq!(
        serde_json::to_value(given.unwrap()).unwrap(),
        serde_json::to_value(&config).unwrap()
    );
    let log = tmp.path().join("pods.log");
    std::fs::write(&log, play(container, 3)).unwrap();
    let out = webscope()
        .arg("merge")
        .arg(tmp.path().join("m"))
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("m/load.json")).unwrap()).unwrap();
    assert!(merged["requests"].as_u64().unwrap() > 0);
    assert_eq!(merged["connections"], 6);
    assert_eq!(merged["generators"].as_array().unwrap().len(), 3);
}

#[test]
fn a_config_that_is_not_one_is_refused_before_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\"connections\": 3}").unwrap();
    let out = webscope()
        .args(["distribute", "--kubernetes", "2", "--", "--config"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines().count() == 1
            && err.contains(&format!(
                "--config {} is not a webscope load config",
                bad.display()
            ))
            && err.contains("missing field"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn flags_the_job_sets_itself_are_refused() {
    for flag in ["--segment", "--json=x.json", "--emit"] {
        let out = webscope()
            .args(["distribute", "--kubernetes", "2", "--", "http://web/", flag])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is set by the Job itself"), "{err}");
    }
}

/// Where kubectl has a cluster to ask (a current context), the API server's own client-side
/// dry run accepts the Job. kubectl's client dry run still asks the server for its API groups,
/// so without a cluster there is nothing to ask; then the test says so and ends.
#[test]
fn kubectl_accepts_the_job_where_it_has_a_cluster() {
    let context = std::process::Command::new("kubectl")
        .args(["config", "current-context"])
        .output();
    match context {
        Ok(out) if out.status.success() => {}
        _ => {
            eprintln!("note: no kubectl with a current context here; the Job was checked against the Job API's fields only");
            return;
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("job.yaml");
    let out = webscope()
        .args(["distribute", "--kubernetes", "3", "-o"])
        .arg(&file)
        .args(["--", "http://web/", "-c", "30"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let dry = std::process::Command::new("kubectl")
        .args(["create", "--dry-run=client", "-o", "name", "-f"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&dry.stdout).trim(),
        "job.batch/webscope-load"
    );
}

/// The Kubernetes versions the README names: the Job validates against each one's schema.
const KUBERNETES_VERSIONS: [&str; 3] = ["1.30.0", "1.33.0", "1.37.0"];

/// The YAML as a YAML 1.1 reader takes it (PyYAML, the Kubernetes Python client, Ansible):
/// `kubernetes-validate --strict` (PyPI; CI installs it and sets
/// WEBSCOPE_REQUIRE_KUBERNETES_VALIDATE) accepts the Job for every version the README names.
/// An unquoted `--start-at` time was read as a datetime and the Job rejected.
#[test]
fn a_yaml_1_1_validator_accepts_the_job() {
    let found = std::process::Command::new("kubernetes-validate")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_KUBERNETES_VALIDATE").is_none(),
            "WEBSCOPE_REQUIRE_KUBERNETES_VALIDATE is set but kubernetes-validate is missing: pip install kubernetes-validate"
        );
        eprintln!(
            "skipping: kubernetes-validate is not installed (pip install kubernetes-validate)"
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The lab's Jobs carry a whole config, its JSON (quotes, `$` escaped) in an argument.
    let config = tmp.path().join("load-config.json");
    let mut whole =
        webscope_load::Config::new(webscope_load::Target::url("http://127.0.0.1/").unwrap());
    whole.headers = vec!["X-Say: \"on\" $(HOME) 1:20".into()];
    std::fs::write(&config, whole.to_json().unwrap()).unwrap();
    let loads = [
        vec!["http://web/", "-c", "30", "-d", "60s"],
        vec!["--config", config.to_str().unwrap()],
    ];
    for (i, load) in loads.iter().enumerate() {
        let file = tmp.path().join(format!("job-{i}.yaml"));
        let out = webscope()
            .args([
                "distribute",
                "--kubernetes",
                "3",
                "--namespace",
                "on",
                "--cpu",
                "1.5",
            ])
            .args(["-o"])
            .arg(&file)
            .arg("--")
            .args(load)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        validate(&file);
    }
}

fn validate(file: &std::path::Path) {
    for version in KUBERNETES_VERSIONS {
        let check = std::process::Command::new("kubernetes-validate")
            .args(["--strict", "-k", version])
            .arg(file)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&check.stdout);
        assert!(
            check.status.success() && said.contains("passed"),
            "Kubernetes {version}: {said}{}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

/// The load options are parsed with load's own parser before anything is written: a bad one
/// is one line and exit 1, and no manifest is left behind.
#[test]
fn load_options_that_load_would_refuse_are_refused_before_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("job.yaml");
    for bad in [
        &["-c", "abc"][..],
        &["--no-such-flag"][..],
        &["--rate", "fast"][..],
    ] {
        let out = webscope()
            .args(["distribute", "--kubernetes", "3", "-o"])
            .arg(&file)
            .args(["--", "http://web/"])
            .args(bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("webscope: error: the load options after -- are not webscope load's")
                && err.lines().count() == 1,
            "{bad:?}: {err}"
        );
        assert!(!file.exists(), "{bad:?}: a manifest was written");
    }
}

/// Paths on this machine that a pod will not have are named in a warning; the Job is still
/// written (an image may carry them).
#[test]
fn local_paths_in_the_load_options_are_warned_about() {
    let warnings = |load: &[&str]| {
        let out = webscope()
            .args(["distribute", "--kubernetes", "2", "--"])
            .args(load)
            .output()
            .unwrap();
        assert!(out.status.success(), "{load:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = warnings(&["--fileset", "/srv/spec", "--base", "http://web/"]);
    assert!(
        err.contains("warning: --fileset /srv/spec is a path on this machine"),
        "{err}"
    );
    let err = warnings(&["http://web/", "--method", "POST", "--body", "@post.json"]);
    assert!(
        err.contains("warning: --body @post.json is a path"),
        "{err}"
    );
    assert!(!err.contains("--fileset"), "{err}");
}
