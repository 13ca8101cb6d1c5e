#!/usr/bin/env python3
"""The `gso` technique of `webscope serve --http3` measured on and off (#50 §2): the server's
CPU per request with UDP segmentation offload (and GRO) and with `--disable gso`.

`serve --http3` with one worker on CPU 0, `webscope load --http3` on CPU 1 with one thread,
closed loop, keep-alive (`-c 4 -M 16` by default), a 1 KiB and a 64 KiB file; per size the
two settings alternated, on off on off ..., `--runs` times each. Per run it prints the
requests per second, the server's CPU microseconds per request (utime+stime from
/proc/PID/stat around the run) and the datagrams its connections sent per sendmsg (from the
server's WEBSCOPE_QUIC_STATS lines: more than 1 is GSO at work). Medians at the end, and
off over on. Ratios, not absolute figures, are what a shared machine can tell.

Usage: bench/h3_gso.py [--binary PATH] [--runs 5] [--duration 4s] [-c 4] [-M 16]
Needs: openssl, taskset. Traffic stays on loopback.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_vs_nginx import cpu_ticks, free_port, wait_port, webscope_binary  # noqa: E402
from serve_tls_vs_nginx import certificate  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
SIZES = {"1k.bin": 1024, "64k.bin": 64 * 1024}


def serve(binary, root, cert, key, gso, stats):
    port = free_port()
    cmd = ["taskset", "-c", "0", binary, "serve", "--root", root, "--listen", f"127.0.0.1:{port}",
           "--workers", "1", "--access-log", "off", "--tls-cert", cert, "--tls-key", key, "--http3"]
    if not gso:
        cmd += ["--disable", "gso"]
    proc = subprocess.Popen(cmd, env=dict(os.environ, WEBSCOPE_QUIC_STATS=stats),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, limit=20.0)
    return proc, port


def per_call(stats):
    """Datagrams per sendmsg over the server's connections (its WEBSCOPE_QUIC_STATS lines)."""
    sent = calls = 0
    with open(stats) as f:
        for line in f:
            fields = dict(kv.split("=", 1) for kv in line.split())
            if fields.get("side") == "server":
                sent += int(fields["udp_tx"])
                calls += int(fields["udp_tx_calls"])
    return sent / max(calls, 1)


def run(binary, root, cert, key, gso, name, args, work):
    stats = os.path.join(work, "quic.stats")
    if os.path.exists(stats):
        os.remove(stats)
    proc, port = serve(binary, root, cert, key, gso, stats)
    out = os.path.join(work, "r.json")
    try:
        before = cpu_ticks(proc.pid)
        subprocess.run(["taskset", "-c", "1", binary, "load", f"https://127.0.0.1:{port}/{name}",
                        "--http3", "-M", str(args.streams), "-c", str(args.connections), "-t", "1",
                        "-d", args.duration, "--cacert", cert, "--json", out],
                       check=True, capture_output=True)
        used = (cpu_ticks(proc.pid) - before) / TICK
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    with open(out) as f:
        r = json.load(f)
    return {
        "rps": r["requests_per_s"],
        "server_us": used * 1e6 / max(r["requests"], 1),
        "per_call": per_call(stats),
        "errors": r["errors"]["total"],
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--duration", default="4s")
    p.add_argument("-c", "--connections", type=int, default=4)
    p.add_argument("-M", "--streams", type=int, default=16)
    args = p.parse_args()
    binary = webscope_binary(args.binary)
    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[0]}", flush=True)
    with tempfile.TemporaryDirectory() as work:
        root = os.path.join(work, "root")
        os.mkdir(root)
        for name, size in SIZES.items():
            with open(os.path.join(root, name), "wb") as f:
                f.write(os.urandom(size))
        cert, key = certificate(work)
        results = {}
        for name in SIZES:
            for i in range(args.runs):
                for gso in (True, False):
                    r = run(binary, root, cert, key, gso, name, args, work)
                    results.setdefault((name, gso), []).append(r)
                    print(f"{name:8} gso {'on ' if gso else 'off'} run {i + 1}: {r['rps']:8.0f} req/s"
                          f"  server {r['server_us']:7.1f} CPU-us/req  {r['per_call']:4.1f} datagrams/sendmsg"
                          f"  errors {r['errors']}", flush=True)
        print("\nmedians:")
        for name in SIZES:
            med = {gso: {k: statistics.median(x[k] for x in results[(name, gso)])
                         for k in ("rps", "server_us", "per_call")} for gso in (True, False)}
            for gso in (True, False):
                m = med[gso]
                print(f"  {name:8} gso {'on ' if gso else 'off'} {m['rps']:8.0f} req/s  server"
                      f" {m['server_us']:7.1f} CPU-us/req  {m['per_call']:4.1f} datagrams/sendmsg")
            print(f"  {name:8} off / on: CPU per request {med[False]['server_us'] / med[True]['server_us']:.2f}x,"
                  f" req/s {med[False]['rps'] / med[True]['rps']:.2f}x")
    with open("/proc/loadavg") as f:
        print(f"load average after: {f.read().split()[0]}")


if __name__ == "__main__":
    main()
