#!/usr/bin/env python3
"""The cumulative ablation of Hu, Nanda & Yang (Figure 10) on webscope serve: the SPECweb96 mix
served with --baseline, then the techniques enabled one by one in the paper's order
(dns-cache, string-cache, mmap, stat-cache, file-cache, uri-cache, sendfile, async-log), with
host-name logging on and the access log written to a file; then today's techniques on top
(+busy-poll: --busy-poll 50, +io-uring: --io uring); then nginx (tuned, both sendfile settings)
on the same mix.

Each configuration is driven by `webscope load` with the SPECweb96 mix (closed loop,
keep-alive), the server pinned to CPU 0 and the generator to CPU 1. Printed per configuration:
req/s, gain over the previous step and over the baseline, server CPU-microseconds per request
(from /proc/PID/stat), and syscalls per request (strace -c -f over a separate short window).
Rounds are repeated (A B C ... A B C ...) and medians printed.

Usage: bench/ablation.py [--rounds 2] [--duration 5] [--connections 50] [--ops 10]
Needs strace, nginx (apt-get installs them if missing), cargo. Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from serve_vs_nginx import ROOT, webscope_binary, TICK, cpu_ticks, ensure_tools, free_port, wait_port

ORDER = ["dns-cache", "string-cache", "mmap", "stat-cache", "file-cache", "uri-cache", "sendfile", "async-log"]
# After Hu's seven (all on), cumulative, as `lab --experiment techniques` runs them.
TODAY = [("busy-poll", ["--busy-poll", "50"]), ("io-uring", ["--io", "uring"])]


class Server:
    def __init__(self, cmd, port, kill_signal=signal.SIGTERM):
        self.port = port
        self.kill_signal = kill_signal
        self.proc = subprocess.Popen(["taskset", "-c", "0", *cmd], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_port(port)
        self.pid = self.proc.pid

    def stop(self):
        self.proc.send_signal(self.kill_signal)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def webscope_server(binary, docroot, work, enabled, extra=()):
    port = free_port()
    cmd = [binary, "serve", "--root", docroot, "--listen", f"127.0.0.1:{port}", "--workers", "1",
           "--access-log", os.path.join(work, "ablation-access.log"), "--hostname-lookups"]
    off = [t for t in ORDER if t not in enabled]
    if len(off) == len(ORDER):
        cmd.append("--baseline")
    elif off:
        cmd += ["--disable", ",".join(off)]
    if "--io" not in extra:
        cmd += ["--io", "epoll"]  # Hu's steps on the engine they were measured on
    return Server(cmd + list(extra), port)


def nginx_server(docroot, work, sendfile):
    port = free_port()
    name = f"nginx-sendfile-{'on' if sendfile else 'off'}"
    conf = os.path.join(work, f"{name}.conf")
    with open(conf, "w") as f:
        f.write(f"""
worker_processes 1; master_process off; daemon off;
error_log {work}/{name}-error.log; pid {work}/{name}.pid;
events {{ worker_connections 4096; }}
http {{
    include /etc/nginx/mime.types;
    access_log {work}/{name}-access.log combined buffer=64k flush=1s;
    sendfile {'on' if sendfile else 'off'}; tcp_nopush on; tcp_nodelay on;
    keepalive_requests 10000;
    open_file_cache max=10000 inactive=20s; open_file_cache_valid 1s;
    server {{ listen 127.0.0.1:{port} reuseport deferred; root {docroot}; }}
}}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    return Server([nginx, "-c", conf, "-p", work], port, signal.SIGQUIT)


def load(binary, fileset, port, args, seconds, out):
    cmd = ["taskset", "-c", "1", binary, "load", "--fileset", fileset, "--base", f"http://127.0.0.1:{port}/",
           "-c", str(args.connections), "-t", "1", "-d", f"{seconds}s", "--quiet", "--json", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def syscalls_per_request(binary, fileset, server, args, work):
    """strace -c -f on the server during a short load; total syscalls / responses."""
    out = os.path.join(work, "strace.txt")
    strace = subprocess.Popen(["strace", "-f", "-c", "-o", out, "-p", str(server.pid)],
                              stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    report = load(binary, fileset, server.port, args, 2, os.path.join(work, "strace-load.json"))
    strace.send_signal(signal.SIGINT)
    strace.wait(timeout=20)
    total = 0
    with open(out) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 5 and fields[-1] == "total":
                total = int(fields[3])
    return total / max(report["requests"], 1)


def measure(binary, fileset, server, args, work):
    load(binary, fileset, server.port, args, 1, os.path.join(work, "warm.json"))
    t0 = cpu_ticks(server.pid)
    report = load(binary, fileset, server.port, args, args.duration, os.path.join(work, "run.json"))
    t1 = cpu_ticks(server.pid)
    errors = sum(v for v in report["errors"].values() if isinstance(v, int))
    result = {
        "rps": report["requests_per_s"],
        "cpu_us": (t1 - t0) / TICK * 1e6 / max(report["requests"], 1),
        "util": (t1 - t0) / TICK / report["duration_s"],
        "errors": errors,
    }
    if args.strace:
        result["syscalls"] = syscalls_per_request(binary, fileset, server, args, work)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--ops", type=int, default=10, help="SPECweb96 set size (expected ops/s)")
    parser.add_argument("--no-strace", dest="strace", action="store_false")
    parser.add_argument("--binary", default=None)
    args = parser.parse_args()
    ensure_tools()
    if args.strace and not shutil.which("strace"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "strace"], check=True, stdout=subprocess.DEVNULL)
    binary = webscope_binary(args.binary)
    work = tempfile.mkdtemp(prefix="webscope-ablation-")
    os.chmod(work, 0o755)
    fileset = os.path.join(work, "specweb96")
    subprocess.run([binary, "fileset", "specweb96", "--out", fileset, "--ops", str(args.ops)], check=True,
                   stdout=subprocess.DEVNULL)
    configs = [("baseline", lambda: webscope_server(binary, fileset, work, []))]
    for i, name in enumerate(ORDER):
        enabled = ORDER[: i + 1]
        configs.append((f"+{name}", lambda e=enabled: webscope_server(binary, fileset, work, e)))
    extra = []
    for name, flags in TODAY:
        extra = extra + flags
        configs.append((f"+{name}", lambda x=extra: webscope_server(binary, fileset, work, ORDER, x)))
    configs += [("nginx sendfile on", lambda: nginx_server(fileset, work, True)),
                ("nginx sendfile off", lambda: nginx_server(fileset, work, False))]
    results = {name: [] for name, _ in configs}
    try:
        for r in range(args.rounds):
            for name, make in configs:
                print(f"round {r + 1}/{args.rounds}: {name} ...", file=sys.stderr)
                server = make()
                try:
                    results[name].append(measure(binary, fileset, server, args, work))
                finally:
                    server.stop()
    except KeyboardInterrupt:
        print("interrupted: printing what was measured", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"SPECweb96 mix (--ops {args.ops}), webscope load -c{args.connections} -t1 keep-alive on CPU 1, "
          f"server on CPU 0, host-name logging on, {args.rounds} rounds of {args.duration} s; medians")
    print(f"  {'configuration':20} {'req/s':>9} {'vs prev':>8} {'vs base':>8} {'CPU-us/req':>11} "
          f"{'syscalls/req':>13} {'server CPU':>10} {'errors':>7}")
    prev = base = None
    med = {}
    for name, runs in results.items():
        if not runs:
            continue
        m = {k: statistics.median(x[k] for x in runs) for k in runs[0]}
        med[name] = m
        vs_prev = f"{100 * (m['rps'] / prev - 1):+.0f}%" if prev and not name.startswith("nginx") else ""
        vs_base = f"{100 * (m['rps'] / base - 1):+.0f}%" if base else ""
        sc = f"{m['syscalls']:.2f}" if "syscalls" in m else "-"
        print(f"  {name:20} {m['rps']:9.0f} {vs_prev:>8} {vs_base:>8} {m['cpu_us']:11.2f} {sc:>13} "
              f"{100 * m['util']:9.0f}% {m['errors']:7.0f}")
        if name == "baseline":
            base = m["rps"]
        if not name.startswith("nginx"):
            prev = m["rps"]
    nginx = [n for n in med if n.startswith("nginx")]
    if nginx:
        best = min(nginx, key=lambda n: med[n]["cpu_us"])
        for step in ("+async-log", *(f"+{name}" for name, _ in TODAY)):
            if step in med:
                w = med[step]
                print(f"  {step} vs {best}: CPU per request {w['cpu_us'] / med[best]['cpu_us']:.2f} x, "
                      f"req/s {w['rps'] / med[best]['rps']:.2f} x")

if __name__ == "__main__":
    main()
