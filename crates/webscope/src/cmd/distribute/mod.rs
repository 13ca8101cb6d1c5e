//! `webscope distribute --kubernetes N`: a run's segments as a Kubernetes Indexed Job, so that
//! the engine users already run starts the generators and webscope only makes their work add
//! up (`load --segment`, `--start-at`, `--emit`, then `webscope merge` on the pods' logs).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};

mod yaml;
use serde_json::{json, Value};

const EXAMPLES: &str = "\
EXAMPLES:
    webscope distribute --kubernetes 3 --image registry.example/webscope:0.1 -- http://web.prod.svc/ -c 300 -d 60s > job.yaml
    kubectl apply -f job.yaml                       # within --start-margin of writing it
    webscope distribute --kubernetes 10 --cpu 2 --memory 1Gi --apply -- http://web/ --rate 50000 -d 5m
    kubectl wait --for=condition=complete job/webscope-load --timeout=10m
    kubectl logs -l job-name=webscope-load --prefix --tail=-1 --max-log-requests=10 > pods.log
    webscope merge merged/ pods.log

The image is built from the workspace with the Containerfile at its root:
    podman build -t registry.example/webscope:0.1 -f Containerfile .";

/// Write (or apply) a Kubernetes Indexed Job that runs a load test from N pods: pod I runs
/// `webscope load --segment I/N --start-at T --emit` with the load options given after `--`,
/// each pod on its own node with whole cores (CPU request = limit), all starting at T; each
/// pod's result leaves in its log, which `webscope merge` reads back.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Pods (segments), each on a node of its own.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    kubernetes: u32,
    /// The container image with webscope in it (see the Containerfile).
    #[arg(long, value_name = "IMAGE", default_value = "webscope:latest")]
    image: String,
    /// The Job's name (pods are labelled job-name=NAME).
    #[arg(long, value_name = "NAME", default_value = "webscope-load")]
    name: String,
    /// The namespace to run in [default: kubectl's current one].
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
    /// Cores for each generator, requested and limited alike so that each has whole cores.
    #[arg(long, value_name = "CORES", default_value = "2")]
    cpu: String,
    /// Memory for each generator, requested and limited alike.
    #[arg(long, value_name = "SIZE", default_value = "512Mi")]
    memory: String,
    /// Time from writing the Job to the common start: enough for scheduling and pulling the
    /// image; a pod that starts after it says how late it was.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::cmd::duration)]
    start_margin: Duration,
    /// Manifest format.
    #[arg(long, value_name = "FORMAT", default_value = "yaml", value_parser = ["yaml", "json"])]
    format: String,
    /// Write the manifest here instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE", conflicts_with = "apply")]
    out: Option<PathBuf>,
    /// Apply it with `kubectl apply -f -` instead of writing it.
    #[arg(long)]
    apply: bool,
    /// `webscope load` options and URL, as for one host (-c and --rate are the whole run's).
    #[arg(last = true, value_name = "LOAD ARGS", required = true)]
    load: Vec<String>,
}

/// Flags the Job sets itself: given after `--`, they would fight it.
const OWN: [&str; 7] = [
    "--segment",
    "--start-at",
    "--emit",
    "--json",
    "--hlog",
    "--samples",
    "--live",
];

pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(flag) = args
        .load
        .iter()
        .find(|a| OWN.iter().any(|own| a.split('=').next() == Some(*own)))
    {
        bail!("{flag} is set by the Job itself (each pod emits its result to its log): leave it out of the load options");
    }
    let pods = super::load::check_for_pods(&args.load).map_err(|why| {
        anyhow::anyhow!("the load options after -- are not webscope load's: {why}")
    })?;
    for path in &pods.local {
        eprintln!(
            "webscope distribute: warning: {path} is a path on this machine: each pod reads it from its own file system, so the image must carry it there"
        );
    }
    let start = SystemTime::now() + args.start_margin;
    let manifest = job(&args, &pods.load, start);
    let text = match args.format.as_str() {
        "json" => serde_json::to_string_pretty(&manifest)? + "\n",
        _ => yaml::to_string(&manifest),
    };
    let collect = format!(
        "kubectl logs -l job-name={} --prefix --tail=-1 --max-log-requests={} > pods.log && webscope merge merged/ pods.log",
        args.name,
        args.kubernetes.max(5)
    );
    if args.apply {
        apply(&text)?;
        eprintln!(
            "webscope distribute: {} pods start at {}; then: {collect}",
            args.kubernetes,
            humantime::format_rfc3339_seconds(start)
        );
        return Ok(());
    }
    match &args.out {
        Some(path) => webscope_sys::write_file(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    eprintln!(
        "webscope distribute: the pods start at {} ({} from now): apply it before then; then: {collect}",
        humantime::format_rfc3339_seconds(start),
        humantime::format_duration(args.start_margin)
    );
    Ok(())
}

/// The Indexed Job, its pods given `load`.
fn job(args: &Args, load: &[String], start: SystemTime) -> Value {
    let n = args.kubernetes;
    let labels = json!({
        "app.kubernetes.io/name": "webscope-load",
        "webscope.dev/run": args.name,
    });
    let mut load_args: Vec<String> = vec!["load".into()];
    load_args.extend(load.iter().cloned());
    load_args.extend([
        "--segment".into(),
        format!("$(JOB_COMPLETION_INDEX)/{n}"),
        "--start-at".into(),
        humantime::format_rfc3339_millis(start).to_string(),
        "--emit".into(),
        "-q".into(),
    ]);
    let resources = json!({ "cpu": args.cpu, "memory": args.memory });
    let mut metadata = json!({ "name": args.name, "labels": labels });
    if let Some(ns) = &args.namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "completionMode": "Indexed",
            "completions": n,
            "parallelism": n,
            // A retried segment would start late and count twice: a failed pod stays failed,
            // and the merge names the missing segment.
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "restartPolicy": "Never",
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [{
                                "labelSelector": { "matchLabels": labels },
                                "topologyKey": "kubernetes.io/hostname",
                            }]
                        }
                    },
                    "containers": [{
                        "name": "load",
                        "image": args.image,
                        "command": ["webscope"],
                        "args": load_args,
                        // Defined here (from the downward API) so that $(JOB_COMPLETION_INDEX)
                        // in the args is expanded whatever the Job controller adds.
                        "env": [{
                            "name": "JOB_COMPLETION_INDEX",
                            "valueFrom": { "fieldRef": {
                                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                            }}
                        }],
                        "resources": { "requests": resources, "limits": resources },
                    }],
                }
            }
        }
    })
}

fn apply(manifest: &str) -> anyhow::Result<()> {
    let mut child = Command::new("kubectl")
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run kubectl (is it installed and on PATH?); or write the manifest with -o FILE and apply it yourself")?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(manifest.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        bail!(
            "kubectl apply failed: {}",
            why.lines().last().unwrap_or("no message")
        );
    }
    Ok(())
}
