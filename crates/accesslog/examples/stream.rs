//! Reads logs through the streaming reader and prints how fast: lines, entries, seconds and
//! lines per second, for a thread count. A measuring tool for the reader alone (what
//! `characterize` costs beyond it is its own), e.g.
//! `cargo run --release -p webscope-accesslog --example stream -- 1 access.log`.

use std::path::PathBuf;
use std::time::Instant;

use webscope_accesslog::{stream_logs, ReadOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(threads) = args.next().and_then(|t| t.parse().ok()) else {
        eprintln!("usage: stream THREADS LOG...   (THREADS 0 = every CPU)");
        std::process::exit(2);
    };
    let paths: Vec<PathBuf> = args.map(PathBuf::from).collect();
    let options = ReadOptions {
        threads,
        ..ReadOptions::default()
    };
    let start = Instant::now();
    let mut bytes = 0u64;
    match stream_logs(&paths, &options, &mut |e| bytes += e.bytes, &mut |_| {}) {
        Ok(summary) => {
            let s = start.elapsed().as_secs_f64();
            println!(
                "threads {threads}: {} lines, {} entries, {} out of order, {s:.2} s, {:.0} lines/s ({bytes} body bytes)",
                summary.lines,
                summary.entries,
                summary.out_of_order,
                summary.lines as f64 / s
            );
        }
        Err(e) => {
            eprintln!("stream: {e}");
            std::process::exit(1);
        }
    }
}
