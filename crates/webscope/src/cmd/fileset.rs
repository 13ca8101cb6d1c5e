//! `webscope fileset`: plan a file set from the flags, write it with its manifest, report it.

use std::path::PathBuf;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use webscope_accesslog::like;

use webscope_report::human::{self, plural};
use webscope_workload::like::RequestSizes;
use webscope_workload::{parse_size, Manifest, Spec, WriteOptions};

const EXAMPLES: &str = "\
EXAMPLES:
    webscope fileset specweb96 --out /tmp/spec --ops 10            # 69 MiB: 14 directories and a part
    webscope fileset webstone-a --out /tmp/wsA                     # WebStone workload A
    webscope fileset webstone-a --out /tmp/wsA4 --scale 4          # A*4 (mean 117 KB)
    webscope fileset heavy-tail --out /tmp/surge --files 10000 --mean 12k --seed 7
    webscope fileset single --out /tmp/one --size 1k               # one 1 KiB file
    webscope fileset specweb96 --out /tmp/big --ops 100 --copies 8 # 8 copies: beat the page cache
    webscope fileset webstone-a --out /tmp/wsA --dry-run           # print the plan, write nothing
    webscope fileset like access.log access.log.1.gz --out /tmp/site  # the site's paths, sizes, mix
    webscope fileset like access.log --out /tmp/site10k --synthetic 10000

Then: webscope serve --root DIR, and webscope load --fileset DIR --base http://127.0.0.1:8080/";

/// Generate a file set and its manifest (path, size, class, access probability of each
/// file), deterministic from a seed: the same seed gives the same bytes.
///
/// The set is written to a hidden directory beside --out and renamed into place when it is
/// complete; an error or Ctrl-C removes it, so a directory with a manifest.json is always a
/// whole set.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    #[command(subcommand)]
    set: Set,
}

#[derive(clap::Subcommand, Debug)]
enum Set {
    /// SPECweb96: directories of 36 files in 4 size classes (0-1, 1-10, 10-100, 100-1000 KB)
    /// requested 35/50/14/1 %; 10*sqrt(ops/5) directories (Hu et al., Tables 1-2).
    Specweb96 {
        /// The expected throughput (ops/s) the set is scaled for: 1 → 22 MB, 10 → 69 MB,
        /// 1000 → 690 MB.
        #[arg(
            long,
            value_name = "N",
            default_value_t = 10.0,
            allow_negative_numbers = true
        )]
        ops: f64,
        #[command(flatten)]
        common: Common,
    },
    /// WebStone workload A (Yates et al., Table 1: 24 HTML, 29 images, 20 sounds, 4 videos)
    /// or its size-scaled variants A/4 .. A*4 (Table 2).
    #[command(name = "webstone-a")]
    WebstoneA {
        /// Size multiplier: 0.25, 0.5, 1, 2 or 4.
        #[arg(
            long,
            value_name = "S",
            default_value_t = 1.0,
            allow_negative_numbers = true
        )]
        scale: f64,
        #[command(flatten)]
        common: Common,
    },
    /// Heavy-tailed sizes (lognormal body, Pareto tail, as SURGE) with Zipf popularity.
    #[command(name = "heavy-tail")]
    HeavyTail {
        /// Number of files.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        files: u64,
        /// Mean file size (e.g. 12k; k = 1024).
        #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
        mean: String,
        /// Zipf exponent of popularity (rank r requested ∝ r^-S).
        #[arg(
            long,
            value_name = "S",
            default_value_t = 1.0,
            allow_negative_numbers = true
        )]
        zipf: f64,
        #[command(flatten)]
        common: Common,
    },
    /// A set like a site's, from its access logs (Common or Combined, plain or gzip), read as
    /// a stream: each distinct URL mostly answered 200, 206 or 304 becomes a file of its
    /// largest 200 response (a query with a size of its own is a file of its own), requested
    /// with the log's probability. Files are named by popularity rank (extension kept) unless
    /// --keep-paths; no client address, referer or user agent is written anywhere.
    Like {
        /// The access logs.
        #[arg(value_name = "LOG", required = true)]
        logs: Vec<PathBuf>,
        /// Make N files drawn from the log's fitted model (Zipf popularity, lognormal body and
        /// Pareto tail of sizes, as `webscope characterize` fits them) instead of one per path,
        /// the popular files as small or large as the log's popular documents; a log too small
        /// for the fits is resampled instead (its files' sizes and counts).
        #[arg(long, value_name = "N")]
        synthetic: Option<u64>,
        /// Keep the site's URL space: plain paths as files (`/` and `dir/` as index.html), the
        /// rest (unsafe or long names, queries of their own, redirects, 404s a file would
        /// answer) in urls.json, which `webscope serve` reads, with nginx-http.conf and
        /// nginx-server.conf for nginx, and apache.conf (reading apache-urls.txt) for Apache.
        /// A replay of the log then gets the logged statuses.
        #[arg(long, conflicts_with = "synthetic")]
        keep_paths: bool,
        /// The logs' format (common, combined, nginx-timed, apache-timed) [default: common
        /// or combined, auto-detected].
        #[arg(long, value_name = "FORMAT")]
        format: Option<webscope_accesslog::Format>,
        #[command(flatten)]
        common: Common,
    },
    /// One file of a given size (ab-style tests).
    Single {
        /// Its size (e.g. 1k, 100k, 1m; k = 1024).
        #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
        size: String,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(clap::Args, Debug)]
struct Common {
    /// Directory to create (must not exist, or be empty; see --force).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Seed of the file contents (and of heavy-tail sizes and popularity).
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Write K copies of the set under copy01/ .. copyK/, requests spread over all of them,
    /// so that the load touches K times more bytes (cache avoidance).
    #[arg(long, value_name = "K", default_value_t = 1)]
    copies: u32,
    /// Replace an earlier file set at --out (only a directory holding a manifest.json).
    #[arg(long)]
    force: bool,
    /// Print the plan and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// No progress line while writing (there is none either when stderr is not a terminal).
    #[arg(short = 'q', long)]
    quiet: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let (spec, common) = match args.set {
        Set::Specweb96 { ops, common } => (Spec::SpecWeb96 { ops }, common),
        Set::WebstoneA { scale, common } => (Spec::WebStoneA { scale }, common),
        Set::HeavyTail {
            files,
            mean,
            zipf,
            common,
        } => {
            let mean = size_flag("--mean", &mean)?;
            (Spec::HeavyTail { files, mean, zipf }, common)
        }
        Set::Single { size, common } => {
            let size = size_flag("--size", &size)?;
            (Spec::Single { size }, common)
        }
        Set::Like {
            logs,
            synthetic,
            keep_paths,
            format,
            common,
        } => {
            let reading = super::reading::Reading::start("fileset like")?;
            let counted = like::count(
                &logs,
                format,
                synthetic.is_some(),
                &reading.stop,
                &mut |n| reading.progress(n),
            );
            reading.finished();
            let counted = counted.context("fileset like")?;
            if let Some(note) = &counted.cut_note {
                eprintln!("warning: {note}");
            }
            print_counted(&counted);
            if counted.interrupted {
                return Err(super::reading::Reading::interrupted(format!(
                    "fileset like interrupted after {}: the counts above are of those; nothing written",
                    plural(counted.lines, "line")
                )));
            }
            let options = webscope_workload::like::LikeOptions {
                keep_paths,
                synthetic,
                source: logs
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                model: counted.model,
            };
            let planned = webscope_workload::like::plan(&counted.observed, &options, common.seed)?;
            if synthetic.is_some() {
                let sizes = RequestSizes::compared(&counted.observed, &planned.manifest);
                if let Some(line) = sizes {
                    println!("{line}");
                }
            }
            if !keep_paths {
                return write_set(planned.manifest, &[], common);
            }
            use webscope_workload::like::apache::{self, APACHE_CONF, APACHE_MAP};
            use webscope_workload::like::nginx::{NGINX_HTTP, NGINX_SERVER};
            // Apache's RewriteMap needs the map's absolute path: the set's, once written. A
            // path it cannot take is refused before anything is said or written.
            let at = std::path::absolute(&common.out).map_err(|e| {
                anyhow::anyhow!(
                    "cannot tell the absolute path of --out {}: {e}",
                    common.out.display()
                )
            })?;
            let (conf, lines) = apache::snippet(&planned.urls, &at)?;
            print!("{}", planned.said());
            let map = serde_json::to_vec_pretty(&planned.urls.to_json())?;
            let (http, server) = webscope_workload::like::nginx::snippets(&planned.urls);
            let beside: [(&str, &[u8]); 5] = [
                (webscope_workload::like::URL_MAP, &map),
                (NGINX_HTTP, http.as_bytes()),
                (NGINX_SERVER, server.as_bytes()),
                (APACHE_CONF, conf.as_bytes()),
                (APACHE_MAP, lines.as_bytes()),
            ];
            return write_set(planned.manifest, &beside, common);
        }
    };
    write_set(spec.plan(common.seed)?, &[], common)
}

/// What the logs held, in one line.
fn print_counted(counted: &like::Counted) {
    let mut line = format!(
        "webscope fileset like: {} to {}, {} of them referenced (answered 2xx or 304: the distinct URLs `webscope characterize` counts)",
        plural(counted.requests, "GET and HEAD request"),
        plural(counted.observed.len() as u64, "distinct URL"),
        human::count(like::referenced(&counted.observed) as u64)
    );
    if counted.left_out > 0 {
        line += &format!(
            "; {} of other methods or unreadable left out (a replay sends GET and HEAD only)",
            plural(counted.left_out, "request")
        );
    }
    if counted.bad_lines > 0 {
        line += &format!("; {} unreadable", plural(counted.bad_lines, "line"));
    }
    if counted.out_of_order > 0 {
        line += &format!(
            "; {} out of time order beyond the look-back",
            plural(counted.out_of_order, "entry")
        );
    }
    println!("{line}");
}

/// Replicates, writes (or, dry, only describes) a planned set, with the files it carries
/// beside its manifest (`beside`: a set like a site's URL map and server snippets).
fn write_set(
    mut manifest: Manifest,
    beside: &[(&str, &[u8])],
    common: Common,
) -> anyhow::Result<()> {
    manifest.replicate(common.copies)?;
    if common.dry_run {
        print!("{}", manifest.summary(&common.out, "would write"));
        return Ok(());
    }
    let cancel = crate::signals::interrupt_flag()?;
    // indicatif draws only when stderr is a terminal; -q hides it there too.
    let bar = if common.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(manifest.total_bytes)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "writing {bar:30} {bytes}/{total_bytes}, {elapsed} spent, ~{eta} left",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut progress = |done: u64, _total: u64| bar.set_position(done);
    let options = WriteOptions {
        force: common.force,
    };
    let result = webscope_workload::write_with(
        &manifest,
        beside,
        &common.out,
        &options,
        &cancel,
        &mut progress,
    );
    bar.finish_and_clear();
    if let Err(webscope_workload::Error::Interrupted) = result {
        // As the lab and the reading of logs end on a signal: 130, nothing half-written left.
        return Err(super::reading::Reading::interrupted(format!(
            "fileset interrupted: nothing written to {} (the part written was removed)",
            common.out.display()
        )));
    }
    result?;
    print!("{}", manifest.summary(&common.out, "wrote"));
    Ok(())
}

/// Sizes are parsed here rather than by clap so that a bad one is reported in one line.
fn size_flag(flag: &str, text: &str) -> anyhow::Result<u64> {
    parse_size(text).map_err(|reason| anyhow::anyhow!("{flag}: {reason}"))
}
