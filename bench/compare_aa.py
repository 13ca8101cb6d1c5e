#!/usr/bin/env python3
"""How often `webscope compare` raises a false alarm on one server run twice, and how often it
catches a slower one, on live runs (#27 §3; the synthetic counterpart is in CI:
crates/lab/src/compare/tests.rs).

One `webscope serve` (one worker, all techniques on) and the naive server of Hu et al.'s
baseline (`--baseline --hostname-lookups`, an access log written); `webscope load --json
--hlog` runs against them. With --repeat R (default 4), each comparison has R runs a side
(a directory of load results each), taken in turn: fast, fast', slow, fast, fast', slow, ...;
`compare` on N A/A pairs (fast against fast') and N A/B pairs (fast against slow). With
--repeat 1, single runs taken fast 0, slow 0, fast 1, ..., fast N; A/A is fast i against
fast i+1. Printed for each metric: the count of significant changes ("false alarms" on A/A,
"caught" on A/B) and of rows that could not be decided; and how the command exited with a
threshold on the four figures (0 pass, 1 crossed, 3 cannot be decided).

Usage: bench/compare_aa.py [--pairs 20] [--repeat 4] [--duration 2] [--interval 0.5s]
                           [--connections 2] [--webscope BIN] [--also BIN ...]
--also: other webscope binaries whose `compare` reads the same runs (e.g. an older build, to
count its false alarms on the same data; before #27 §3 compare read no directories, so use
it with --repeat 1). Traffic stays on 127.0.0.1.

Measured on a 2-CPU VM shared with other builds (debug build, 20 pairs): with --repeat 1,
4-s runs, the old bootstrap over intervals raised false alarms in 11/20 (rps), 7/20 (p50),
11/20 (p99), 7/20 (p99.9) A/A pairs and exited 1 on 7 of them; a rank test over the
intervals did no better (10, 8, 11/20), which is why one run a side now decides nothing.
With --repeat 4 (2-s runs, rank test over runs): A/A false alarms rps 0/20, p50 1/20, p99 0/20
(3 undecided), p99.9 19/20 undecided (runs under 10 000 requests); the naive server caught
by p50 in 20/20 (its rps and p99 overlap the fast server's on this machine: 3/20 each), and
every A/B comparison exited 1.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_vs_nginx import webscope_binary  # noqa: E402

METRICS = ["rps", "p50", "p99", "p999"]
THRESHOLD = "rps>-5%,p50<+5%,p99<+5%,p999<+5%"


def pinned(cpu, cmd):
    return (["taskset", "-c", str(cpu)] if shutil.which("taskset") else []) + cmd


def serve(binary, root, extra):
    cmd = [binary, "serve", "--listen", "127.0.0.1:0", "--workers", "1", "--root", root, *extra]
    if "--access-log" not in extra:
        cmd += ["--access-log", "/dev/null"]
    proc = subprocess.Popen(pinned(0, cmd), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    url = line.split("listening on ")[1].split()[0]
    return proc, url + "/"


def load(binary, url, root, out, args):
    cmd = [binary, "load", "--fileset", root, "--base", url, "-c", str(args.connections),
           "-t", "1", "-d", f"{args.duration}s", "--interval", args.interval,
           "--json", out + ".json", "--hlog", out + ".hlog", "-q"]
    subprocess.run(pinned(1, cmd), check=True, stdout=subprocess.DEVNULL)
    return out + ".json"


def compare(binary, a, b, out):
    run = subprocess.run([binary, "compare", a, b, "--threshold", THRESHOLD, "--json", out],
                         capture_output=True, text=True)
    rows = {}
    if os.path.exists(out):
        with open(out) as f:
            for r in json.load(f)[0]["rows"]:
                rows[r["metric"]] = r
        os.remove(out)
    return rows, run.returncode


def count(binary, pairs, tmp):
    sig = collections.Counter()
    undecided = collections.Counter()
    codes = collections.Counter()
    for i, (a, b) in enumerate(pairs):
        rows, code = compare(binary, a, b, os.path.join(tmp, f"cmp{i}.json"))
        codes[code] += 1
        for m in METRICS:
            r = rows.get(m)
            if r is None or not r.get("decided", True):
                undecided[m] += 1
            elif r["significant"]:
                sig[m] += 1
    return sig, undecided, codes


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--repeat", type=int, default=4)
    p.add_argument("--duration", type=float, default=2)
    p.add_argument("--interval", default="0.5s")
    p.add_argument("--connections", type=int, default=2)
    p.add_argument("--webscope")
    p.add_argument("--also", action="append", default=[])
    args = p.parse_args()
    binary = webscope_binary(args.webscope)
    tmp = tempfile.mkdtemp(prefix="compare-aa-")
    try:
        root = os.path.join(tmp, "set")
        subprocess.run([binary, "fileset", "webstone-a", "--scale", "0.25", "--out", root],
                       check=True, stdout=subprocess.DEVNULL)
        fast, fast_url = serve(binary, root, [])
        slow, slow_url = serve(binary, root, ["--baseline", "--hostname-lookups",
                                              "--access-log", os.path.join(tmp, "access.log")])
        try:
            if args.repeat == 1:
                fasts, slows = [], []
                for i in range(args.pairs + 1):
                    fasts.append(load(binary, fast_url, root, os.path.join(tmp, f"fast{i}"), args))
                    if i < args.pairs:
                        slows.append(load(binary, slow_url, root, os.path.join(tmp, f"slow{i}"), args))
                aa = list(zip(fasts, fasts[1:]))
                ab = list(zip(fasts, slows))
            else:
                aa, ab = [], []
                for i in range(args.pairs):
                    dirs = [os.path.join(tmp, f"{side}{i}") for side in ("fast", "again", "slow")]
                    for d in dirs:
                        os.mkdir(d)
                    for r in range(args.repeat):
                        for d, url in zip(dirs, (fast_url, fast_url, slow_url)):
                            load(binary, url, root, os.path.join(d, str(r)), args)
                    aa.append((dirs[0], dirs[1]))
                    ab.append((dirs[0], dirs[2]))
        finally:
            for proc in (fast, slow):
                proc.terminate()
                proc.wait()
        print(f"{args.pairs} A/A and {args.pairs} A/B pairs, {args.repeat} run(s) a side of "
              f"{args.duration:g} s, {args.interval} intervals, {args.connections} connections; "
              f"threshold {THRESHOLD}")
        for b in [binary, *args.also]:
            print(f"\n{b}")
            for name, pairs in (("A/A (false alarms)", aa), ("A/B (caught)", ab)):
                sig, undecided, codes = count(b, pairs, tmp)
                cells = ", ".join(f"{m} {sig[m]}/{len(pairs)} ({undecided[m]} undecided)" for m in METRICS)
                exits = ", ".join(f"exit {c}: {n}" for c, n in sorted(codes.items()))
                print(f"  {name}: {cells}; {exits}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
