#!/usr/bin/env python3
"""Duet against RMIT, measured before duet is built (#48 item 5): does loading A and B at the
same time (Bulej et al.'s duet benchmarking, each server with its own generator) give a
narrower interval per minute than running them back to back in random order (Abedi & Brecht's
RMIT, what `lab --experiment ab` does)?

Pairs of nginx as bench/ab_power.py starts them (one worker each, both on CPU 0; generators on
CPU 1). Each experiment spends the same wall time measuring (--budget) either way:
- rmit: pairs of --trial-s runs, A and B back to back, the order alternating;
- duet: --trial-s runs of A and B at once, two `webscope load` processes started together.
Per pair, the log-ratio B/A of goodput and of the server's CPU per request (nginx's own run
time from /proc/PID/schedstat, ns). Per experiment, a 95 % t interval on the mean log-ratio.

Prints each experiment and a Markdown table per case and method: the median interval width,
how often the interval excludes 0 (a false alarm for `aa`), and how often it lies wholly beyond
--threshold (a CROSSED verdict). Traffic stays on 127.0.0.1; every process started is stopped
on any exit (Ctrl-C prints what was measured so far).
"""
import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_power import CASES, Nginx, run_ns  # noqa: E402
from capacity_repeatability import ensure_nginx, raise_interrupt, stop_all  # noqa: E402
from serve_vs_nginx import webscope_binary  # noqa: E402

# Two-sided 95 % t quantiles by degrees of freedom (enough for the pairs an experiment takes).
T95 = {1: 12.71, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
       10: 2.228, 12: 2.179, 14: 2.145, 16: 2.120, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.0}


def t95(df):
    return T95[max(k for k in T95 if k <= df)] if df >= 1 else math.inf


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="aa,log", help="which cases of ab_power.py (default aa,log)")
    p.add_argument("--experiments", type=int, default=5, help="experiments per case and method (default 5)")
    p.add_argument("--budget", type=float, default=60.0, help="seconds of measuring per experiment (default 60)")
    p.add_argument("--trial-s", type=float, default=2.0, help="each run's length, seconds (default 2)")
    p.add_argument("--clients", type=int, default=8, help="closed-loop connections per server (default 8)")
    p.add_argument("--threshold", type=float, default=3.0, help="a change beyond this many per cent is CROSSED (default 3)")
    p.add_argument("--methods", default="rmit,duet", help="which methods (default rmit,duet)")
    p.add_argument("--webscope", metavar="BIN", help="webscope binary (default: cargo build --release)")
    return p.parse_args()


def start_load(ws, server, fileset, out, args):
    return subprocess.Popen(["taskset", "-c", "1", ws, "load", "--fileset", fileset, "--base", server.url,
                             "-c", str(args.clients), "-t", "1", "-d", f"{args.trial_s}s", "-q", "--json", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(ws, servers, fileset, work, args):
    """Runs `servers` at once (one) or as given: each one's goodput and CPU µs per request."""
    before = {s: run_ns(s.proc.pid) for s in servers}
    procs = {s: start_load(ws, s, fileset, os.path.join(work, f"{s.port}.json"), args) for s in servers}
    for p in procs.values():
        p.wait()
    got = {}
    for s in servers:
        with open(os.path.join(work, f"{s.port}.json")) as f:
            r = json.load(f)
        cpu_us = (run_ns(s.proc.pid) - before[s]) / 1e3 / max(r["requests"], 1)
        got[s] = (r["requests_per_s"], cpu_us)
    return got


def experiment(ws, a, b, fileset, work, method, args):
    """One experiment's log-ratios per pair, (goodput, cpu_us), within the time budget."""
    ratios = []
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < args.budget:
        if method == "duet":
            # Whose generator starts first alternates: a head start of a few ms is a bias.
            got = measure(ws, [a, b] if i % 2 == 0 else [b, a], fileset, work, args)
        else:
            got = {}
            for s in ((a, b) if i % 2 == 0 else (b, a)):
                got.update(measure(ws, [s], fileset, work, args))
        ratios.append(tuple(math.log(got[b][k] / got[a][k]) for k in (0, 1)))
        i += 1
    return ratios


def interval(logs):
    n = len(logs)
    mean = statistics.fmean(logs)
    half = t95(n - 1) * statistics.stdev(logs) / math.sqrt(n) if n > 1 else math.inf
    return 100 * (math.exp(mean - half) - 1), 100 * (math.exp(mean + half) - 1)


def main():
    args = parse_args()
    signal.signal(signal.SIGTERM, raise_interrupt)
    ensure_nginx()
    ws = webscope_binary(args.webscope)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="duet-") as work:
            fileset = os.path.join(work, "set")
            subprocess.run([ws, "fileset", "specweb96", "--ops", "1", "--out", fileset], check=True,
                           stdout=subprocess.DEVNULL)
            for case in args.cases.split(","):
                a_kind, b_kind = CASES[case]
                a = Nginx(fileset, os.path.join(work, case, "a"), a_kind)
                b = Nginx(fileset, os.path.join(work, case, "b"), b_kind)
                for i in range(args.experiments):
                    # Both methods in each round of experiments, in alternating order.
                    methods = args.methods.split(",")
                    for method in (methods if i % 2 == 0 else methods[::-1]):
                        ratios = experiment(ws, a, b, fileset, work, method, args)
                        ivs = [interval([r[k] for r in ratios]) for k in (0, 1)]
                        rows.append((case, method, len(ratios), ivs))
                        said = ", ".join(f"{m} {lo:+.1f} .. {hi:+.1f} %" for m, (lo, hi) in zip(("goodput", "cpu_us"), ivs))
                        print(f"{case} {method} #{i + 1}: {len(ratios)} pairs, {said}", flush=True)
                a.stop()
                b.stop()
    except KeyboardInterrupt:
        print("interrupted: what was measured so far", file=sys.stderr)
    finally:
        stop_all()
    table(rows, args.threshold)


def table(rows, threshold):
    print(f"\n| case | method | experiments | pairs (median) | goodput: median width / excludes 0 / beyond -{threshold:g} % "
          f"| cpu_us: median width / excludes 0 / beyond +{threshold:g} % |")
    print("|---|---|---|---|---|---|")
    for case, method in dict.fromkeys((r[0], r[1]) for r in rows):
        rs = [r for r in rows if r[0] == case and r[1] == method]
        cells = []
        for k, beyond in ((0, lambda lo, hi: hi < -threshold), (1, lambda lo, hi: lo > threshold)):
            ivs = [r[3][k] for r in rs]
            width = statistics.median(hi - lo for lo, hi in ivs)
            excl = sum(1 for lo, hi in ivs if lo > 0 or hi < 0)
            cells.append(f"{width:.1f} pts / {excl} / {sum(1 for lo, hi in ivs if beyond(lo, hi))}")
        print(f"| {case} | {method} | {len(rs)} | {statistics.median(r[2] for r in rs):.0f} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
