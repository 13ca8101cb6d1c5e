#!/usr/bin/env python3
"""Whether two servers loaded in turn see the same machine (#33's next step): two identical
nginx (one worker each, both on CPU 0, serving one 1 KiB file) are driven alternately, A B, B A,
..., with `webscope load` runs at a rate past their peak from CPU 1, and their goodput is set
side by side.

On a shared VM each server's peak moves from one run to the next (#33: 10-20 % within minutes,
while an idle-time reference loop holds), so two searches run one after the other cannot tell a
5 % change. If the machine's moves are slow next to a run, the ratio of a pair taken seconds
apart holds while each one's figure moves, and an interleaved comparison could decide what
separate searches cannot. This prints each pair and a Markdown table: each server's median,
spread ((max - min) / median) and coefficient of variation, and the same for the pairs' ratio.

Traffic stays on 127.0.0.1; both nginx are stopped on any exit, and Ctrl-C prints the pairs so
far. Needs nginx (installed as root if missing), taskset and cargo (unless --webscope).
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capacity_repeatability import Nginx, ensure_nginx, raise_interrupt, stop_all  # noqa: E402
from serve_vs_nginx import webscope_binary  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=30, help="pairs of runs (default 30)")
    p.add_argument("--rate", default="128000", help="each run's open-loop rate, past the peak (default 128000)")
    p.add_argument("--duration", default="3s", help="each run's length (default 3s)")
    p.add_argument("--gap", type=float, default=0.5, help="seconds between runs (default 0.5)")
    p.add_argument("--webscope", metavar="BIN", help="webscope binary (default: cargo build --release)")
    return p.parse_args()


def goodput(ws, port, args, work):
    """One run's answered requests per second."""
    out = os.path.join(work, "run.json")
    cmd = ["taskset", "-c", "1", ws, "load", f"http://127.0.0.1:{port}/f1k", "-c", "64",
           "--rate", args.rate, "-d", args.duration, "-q", "--json", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return float(json.load(f)["requests_per_s"])


def row(name, values, shown):
    median = statistics.median(values)
    spread = (max(values) - min(values)) / median
    cv = statistics.stdev(values) / statistics.mean(values)
    return f"| {name} | {shown(median)} | {100 * spread:.1f} % | {100 * cv:.1f} % |"


def report(pairs):
    if len(pairs) < 2:
        print("fewer than two pairs: nothing to compare")
        return
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    print(f"\n{len(pairs)} pairs, each A and B seconds apart, in alternating order.\n")
    print("| figure | median | spread | coefficient of variation |")
    print("|---|---|---|---|")
    rps = lambda x: f"{x:,.0f}".replace(",", " ")  # noqa: E731
    print(row("A, req/s", a, rps))
    print(row("B, req/s", b, rps))
    print(row("A / B", [x / y for x, y in pairs], lambda x: f"{x:.3f}"))


def main():
    args = parse_args()
    signal.signal(signal.SIGTERM, raise_interrupt)
    ensure_nginx()
    ws = webscope_binary(args.webscope)
    pairs = []
    with tempfile.TemporaryDirectory(prefix="paired-peak-") as work:
        root = os.path.join(work, "www")
        os.makedirs(root)
        with open(os.path.join(root, "f1k"), "wb") as f:
            f.write(b"x" * 1024)
        servers = []
        try:
            for name in ("a", "b"):
                os.makedirs(os.path.join(work, name))
                servers.append(Nginx(root, os.path.join(work, name)))
            goodput(ws, servers[0].port, args, work)  # warm both the file cache and the binary
            for i in range(args.pairs):
                got = {}
                for s in servers if i % 2 == 0 else servers[::-1]:
                    got[s.port] = goodput(ws, s.port, args, work)
                    time.sleep(args.gap)
                pair = (got[servers[0].port], got[servers[1].port])
                pairs.append(pair)
                print(f"[{i + 1}/{args.pairs}] A {pair[0]:.0f}  B {pair[1]:.0f}  A/B {pair[0] / pair[1]:.3f}",
                      file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            print("interrupted: the pairs so far", file=sys.stderr)
        finally:
            for s in servers:
                s.stop()
            stop_all()
    report(pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
