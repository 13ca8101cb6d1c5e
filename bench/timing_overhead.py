#!/usr/bin/env python3
"""The cost of webscope serve's server-side timing: the same server with timing on (default)
and off (--no-timing), alternated (A B A B ...), under wrk with 1 KiB keep-alive requests, the
case where per-request overhead weighs most. Prints req/s and server CPU-microseconds per
request for each, and the overhead in per cent of throughput and of CPU per request.

Usage: bench/timing_overhead.py [--pairs 5] [--duration 5]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

from serve_vs_nginx import ROOT, webscope_binary, Webscope, ensure_tools, make_docroot, measure


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--binary", default=None)
    args = parser.parse_args()
    ensure_tools()
    binary = webscope_binary(args.binary)
    work = tempfile.mkdtemp(prefix="webscope-timing-")
    docroot = make_docroot(work, {"1k.bin": 1024})
    variants = [("timing-on", ()), ("timing-off", ("--no-timing",))]
    results = {name: [] for name, _ in variants}
    try:
        for _ in range(args.pairs):
            for name, extra in variants:
                server = Webscope(binary, docroot, work, extra, name)
                try:
                    results[name].append(measure(server, "/1k.bin", False, args))
                finally:
                    server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrk -t1 -c{args.connections} -d{args.duration}s, 1 KiB keep-alive, {args.pairs} alternations; medians")
    med = {}
    for name, runs in results.items():
        med[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        m = med[name]
        print(f"  {name:11} {m['rps']:10.0f} req/s {m['cpu_us']:7.2f} CPU-us/req")
    on, off = med["timing-on"], med["timing-off"]
    print(f"  overhead: throughput {100 * (1 - on['rps'] / off['rps']):+.2f} %, "
          f"CPU per request {100 * (on['cpu_us'] / off['cpu_us'] - 1):+.2f} %")


if __name__ == "__main__":
    main()
