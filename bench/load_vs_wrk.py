#!/usr/bin/env python3
"""webscope load vs wrk, side by side: requests per CPU-second of the load generator.

Serves a 1 KiB file from nginx (one worker, tuned as in bench/serve_vs_nginx.py) pinned to
CPU 0, and drives it alternately with wrk and with `webscope load` pinned to CPU 1, with the
same threads, connections and duration (A B A B ...), keep-alive and then `Connection: close`.
Each generator's CPU time is its rusage (user + system) as returned by wait4(), the same
measure for both. Prints per run the requests/s and the requests per generator CPU-second,
then per scenario the medians, the ratio webscope/wrk and the spread of the per-pair ratios
(the noise). Finally checks open-loop rate accuracy: webscope load --rate at half the
closed-loop throughput, achieved rate vs asked.

Targets (issue 16; issue 3 had 1.2 and 1.0): keep-alive ratio >= 1.3, close ratio >= 1.1, open
loop within 1 %. --io uring (or both: epoll and uring in every pair) picks webscope's engine
in closed loop.

With --tls, nginx serves the file over TLS (a self-signed certificate made with openssl,
ssl_session_cache on) and both generators speak https (webscope with --insecure, as wrk does
not check certificates); --size picks the file's size in KiB.

Usage: bench/load_vs_wrk.py [--pairs 3] [--duration 5] [--connections 50] [--binary PATH]
                            [--tls] [--size 1] [--io epoll|uring|both]
Needs: nginx and wrk (installed with apt-get if missing, as root), taskset, cargo.
Traffic stays on 127.0.0.1.
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

from serve_vs_nginx import ROOT, ensure_tools, free_port, wait_port  # noqa: E402


class Nginx:
    def __init__(self, docroot, work, tls=False):
        self.port = free_port()
        ssl = ""
        if tls:
            cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                            "-addext", "subjectAltName=IP:127.0.0.1"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            ssl = f"ssl_certificate {cert}; ssl_certificate_key {key}; ssl_session_cache shared:SSL:10m;"
        listen_ssl = " ssl" if tls else ""
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
worker_processes 1;
master_process off;
daemon off;
error_log {work}/nginx-error.log;
pid {work}/nginx.pid;
worker_rlimit_nofile 65536;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    sendfile off;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 100000;
    open_file_cache max=1000 inactive=20s;
    open_file_cache_valid 1s;
    server {{
        listen 127.0.0.1:{self.port}{listen_ssl} reuseport backlog=4096;
        root {docroot};
        {ssl}
    }}
}}
""")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen(["taskset", "-c", "0", nginx, "-c", conf, "-p", work],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def run_measured(cmd):
    """Runs cmd; returns (stdout, wall seconds, cpu seconds of the child from wait4)."""
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.time() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{out}")
    return out, wall, usage.ru_utime + usage.ru_stime


def run_wrk(url, args, close, duration):
    cmd = ["taskset", "-c", "1", "wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{duration}s", url]
    if close:
        cmd[5:5] = ["-H", "Connection: close"]
    out, wall, cpu = run_measured(cmd)
    requests = None
    errors = ""
    for line in out.splitlines():
        if "requests in" in line:
            requests = int(line.split()[0])
        if "Non-2xx" in line or "Socket errors" in line:
            errors = line.strip()
    if requests is None:
        raise RuntimeError("cannot read wrk output:\n" + out)
    return {"requests": requests, "seconds": float(duration), "cpu": cpu, "errors": errors}


def run_webscope(binary, url, args, close, duration, work, extra=()):
    report = os.path.join(work, "load.json")
    cmd = ["taskset", "-c", "1", binary, "load", url, "-t", str(args.threads), "-c", str(args.connections),
           "-d", f"{duration}s", "--quiet", "--json", report, *extra]
    if close:
        cmd.append("--close")
    _, wall, cpu = run_measured(cmd)
    with open(report) as f:
        r = json.load(f)
    errors = "" if r["errors"]["total"] == 0 else f"errors {r['errors']}"
    return {"requests": r["requests"], "seconds": r["duration_s"], "cpu": cpu, "errors": errors,
            "self_cpu": r["generator_cpu_s"], "report": r}


def describe(name, run):
    rps = run["requests"] / run["seconds"]
    per_cpu = run["requests"] / max(run["cpu"], 1e-9)
    extra = f"  {run['errors']}" if run["errors"] else ""
    print(f"    {name:<9} {rps:>10.0f} req/s  {run['cpu']:6.2f} s CPU  {per_cpu:>10.0f} req per CPU-s{extra}",
          flush=True)
    return rps, per_cpu


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="alternations per scenario (default 3)")
    parser.add_argument("--duration", type=int, default=5, help="seconds per run (default 5)")
    parser.add_argument("--connections", type=int, default=50, help="connections (default 50)")
    parser.add_argument("--threads", type=int, default=1, help="generator threads (default 1)")
    parser.add_argument("--binary", default=None, help="webscope binary (default: build release)")
    parser.add_argument("--tls", action="store_true", help="https (nginx with a self-signed certificate)")
    parser.add_argument("--size", type=int, default=1, help="file size in KiB (default 1)")
    parser.add_argument("--io", default="epoll", choices=["epoll", "uring", "both"],
                        help="webscope's engine in closed loop (both: each in every pair)")
    parser.add_argument("--only", default=None, choices=["keep-alive", "close", "open"],
                        help="run one scenario only")
    args = parser.parse_args()
    ensure_tools()
    binary = args.binary
    if binary is None:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "webscope"], cwd=ROOT, check=True)
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        binary = os.path.join(target, "release", "webscope")
    work = tempfile.mkdtemp(prefix="webscope-loadbench-")
    docroot = os.path.join(work, "www")
    os.makedirs(docroot)
    with open(os.path.join(docroot, "file.bin"), "wb") as f:
        f.write(os.urandom(1024 * args.size))
    nginx = Nginx(docroot, work, args.tls)
    scheme = "https" if args.tls else "http"
    url = f"{scheme}://127.0.0.1:{nginx.port}/file.bin"
    tls_flags = ("--insecure",) if args.tls else ()
    print(f"nginx pinned to CPU 0, generators to CPU 1; -t{args.threads} -c{args.connections} "
          f"-d{args.duration}s, {args.pairs} pairs; load average at start {loadavg()}")
    results = {}
    try:
        for close in (False, True):
            scenario = "close" if close else "keep-alive"
            if args.only and args.only != scenario:
                continue
            print(f"\n== {scenario} ({args.size} KiB, {scheme})")
            run_wrk(url, args, close, 1)  # warm-up
            engines = ["epoll", "uring"] if args.io == "both" else [args.io]
            wrk_rps, wrk_eff = [], []
            ratios = {e: [] for e in engines}
            ws_rps = {e: [] for e in engines}
            ws_eff = {e: [] for e in engines}
            for pair in range(args.pairs):
                a = run_wrk(url, args, close, args.duration)
                r1, e1 = describe("wrk", a)
                wrk_rps.append(r1)
                wrk_eff.append(e1)
                for engine in engines:
                    b = run_webscope(binary, url, args, close, args.duration, work, (*tls_flags, "--io", engine))
                    r2, e2 = describe(engine if len(engines) > 1 else "webscope", b)
                    print(f"    (webscope's own count of its CPU: {b['self_cpu']:.2f} s)")
                    ws_rps[engine].append(r2)
                    ws_eff[engine].append(e2)
                    ratios[engine].append(e2 / e1)
            print(f"  median req/s:            wrk {statistics.median(wrk_rps):.0f}, " + ", ".join(
                f"webscope --io {e} {statistics.median(ws_rps[e]):.0f}" for e in engines))
            print(f"  median req per CPU-s:    wrk {statistics.median(wrk_eff):.0f}, " + ", ".join(
                f"webscope --io {e} {statistics.median(ws_eff[e]):.0f}" for e in engines))
            for e in engines:
                ratio = statistics.median(ws_eff[e]) / statistics.median(wrk_eff)
                results[scenario] = max(results.get(scenario, 0.0), ratio)
                print(f"  ratio webscope --io {e}/wrk: {ratio:.2f} (per pair "
                      f"{', '.join(f'{r:.2f}' for r in ratios[e])}; "
                      f"spread {min(ratios[e]):.2f}..{max(ratios[e]):.2f})")
            if scenario == "keep-alive":
                results["capacity"] = max(statistics.median(ws_rps[e]) for e in engines)
        if not args.only or args.only == "open":
            capacity = results.get("capacity")
            if capacity is None:
                capacity = run_webscope(binary, url, args, False, 2, work)["requests"] / 2
            rate = round(capacity / 2, -2)
            print(f"\n== open loop at {rate:.0f} req/s (half the closed-loop throughput), keep-alive")
            for arrivals in ("constant", "poisson"):
                b = run_webscope(binary, url, args, False, args.duration, work,
                                 ("--rate", str(rate), "--arrivals", arrivals))
                r = b["report"]
                achieved = r["requests"] / r["duration_s"]
                print(f"    {arrivals:<9} asked {rate:.0f}/s, achieved {achieved:.0f}/s "
                      f"({(achieved / rate - 1) * 100:+.2f} %), not sent {r['not_sent']}, "
                      f"p99 {r['latency_us']['p99']:.0f}us (uncorrected "
                      f"{r['uncorrected_latency_us']['p99']:.0f}us)")
    finally:
        nginx.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average at end {loadavg()} (other work on this machine makes absolute figures noisy)")
    for scenario, target in (("keep-alive", 1.3), ("close", 1.1)):
        if scenario in results:
            verdict = "met" if results[scenario] >= target else "NOT met"
            print(f"{scenario}: webscope/wrk requests per CPU-second = {results[scenario]:.2f} "
                  f"(target >= {target}: {verdict})")


if __name__ == "__main__":
    main()
