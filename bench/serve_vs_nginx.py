#!/usr/bin/env python3
"""webscope serve vs nginx, side by side: server CPU-microseconds per request.

Serves the same 1 KiB and 100 KiB files from `webscope serve` and from nginx (tuned: one
worker, tcp_nopush, open_file_cache, buffered access log, deferred accept as webscope has by
default; once with sendfile on and once off, the better of the two counting), pins each server to CPU 0 and wrk to CPU 1, alternates the
servers (A B C A B C ...) and prints, per scenario, the median req/s, the server's
CPU-microseconds per request (utime+stime from /proc/PID/stat before and after), and both
processes' CPU utilisation, and the latency tails p99 and p99.9 (at --connections and at one
connection). On 2 cores the load generator may saturate before the server does,
so CPU per request is the figure that compares servers honestly.

By default webscope serves on its default engine (io_uring where the kernel allows it, named
"webscope"); --io epoll, uring, both or all measure the engines by name ("webscope-epoll",
"webscope-uring") beside it or instead. --before BINARY adds another build of webscope on its own
default engine ("webscope-before"), alternated with the others: a change's before and after.

Scenarios: 1 KiB and 100 KiB keep-alive and 1 KiB with a connection per request (wrk), and the
SPECweb96 mix keep-alive (wrk cannot draw a mix: `webscope load --fileset` drives every server,
one thread on CPU 1, the same generator for all).

With --scaling, 1 KiB keep-alive only: each server with one worker and with two, nothing pinned
(servers and wrk -t2 share both cores), and the req/s at two workers over one, per server: how
far each scales when the generator competes for the same cores.

Usage: bench/serve_vs_nginx.py [--pairs 3] [--duration 5] [--connections 50]
                              [--io default|epoll|uring|both|all] [--before BINARY] [--ceiling] [--scaling]
Needs: nginx and wrk (installed with apt-get if missing and running as root), cargo.
Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")
# Where servers and wrk run, and wrk's threads: one core each, unless --scaling shares both.
PLACE = {"server": "0", "wrk": "1", "wrk_threads": 1}


def ensure_tools():
    missing = [t for t in ("nginx", "wrk") if not shutil.which(t) and not os.path.exists("/usr/sbin/" + t)]
    if missing:
        print(f"installing {' '.join(missing)} ...", file=sys.stderr)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, stdout=subprocess.DEVNULL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def webscope_binary(given=None):
    """The webscope binary to measure: the one given, or a fresh release build."""
    if given:
        return given
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "webscope"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "release", "webscope")


def cpu_ticks(pid):
    """utime + stime of a process and all its threads, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def make_docroot(work, files):
    """A docroot under `work` with random files of the given sizes: {name: bytes}."""
    docroot = os.path.join(work, "www")
    os.makedirs(docroot)
    for name, size in files.items():
        with open(os.path.join(docroot, name), "wb") as f:
            f.write(os.urandom(size))
    os.chmod(work, 0o755)
    return docroot


def wait_port(port, limit=5.0):
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on port {port}")


class Webscope:
    def __init__(self, binary, docroot, work, extra=(), name="webscope", workers=1):
        self.name = name
        self.port = free_port()
        log = os.path.join(work, f"{name}-access.log")
        self.proc = subprocess.Popen(
            ["taskset", "-c", PLACE["server"], binary, "serve", "--root", docroot, "--listen",
             f"127.0.0.1:{self.port}", "--workers", str(workers), "--access-log", log, *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)
        self.pid = self.proc.pid

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=15)


class Responder:
    """The ceiling: crates/server/examples/minimal_responder.rs (fixed 1 KiB reply, no parsing)."""

    def __init__(self, binary):
        self.name = "minimal-responder"
        self.port = free_port()
        self.proc = subprocess.Popen(["taskset", "-c", PLACE["server"], binary, f"127.0.0.1:{self.port}", "1"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)
        self.pid = self.proc.pid

    def stop(self):
        self.proc.kill()
        self.proc.wait(timeout=15)


class Nginx:
    def __init__(self, docroot, work, sendfile, workers=1):
        self.name = f"nginx-sendfile-{'on' if sendfile else 'off'}"
        self.port = free_port()
        conf = os.path.join(work, f"{self.name}.conf")
        with open(conf, "w") as f:
            f.write(f"""
worker_processes {workers};
master_process {'on' if workers > 1 else 'off'};
daemon off;
error_log {work}/{self.name}-error.log;
pid {work}/{self.name}.pid;
events {{ worker_connections 4096; }}
http {{
    include /etc/nginx/mime.types;
    access_log {work}/{self.name}-access.log combined buffer=64k flush=1s;
    sendfile {'on' if sendfile else 'off'};
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 10000;
    open_file_cache max=1000 inactive=20s;
    open_file_cache_valid 1s;
    server {{
        listen 127.0.0.1:{self.port} reuseport deferred;
        root {docroot};
    }}
}}
""")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen(["taskset", "-c", PLACE["server"], nginx, "-c", conf, "-p", work],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)
        self.pid = self.proc.pid

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# wrk's --latency stops at p99; its done() hook reads any percentile of its histogram (µs).
TAILS_LUA = """
done = function(summary, latency, requests)
  io.write(string.format("webscope-tails %.0f %.0f\\n", latency:percentile(99), latency:percentile(99.9)))
end
"""


def tails_script():
    path = os.path.join(tempfile.gettempdir(), f"webscope-tails-{os.getpid()}.lua")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(TAILS_LUA)
    return path


def run_wrk(port, path, close, connections, duration, tails=None):
    """Runs wrk where PLACE says; returns (requests, wrk cpu seconds); fills `tails` with
    p99_us and p999_us when given."""
    cmd = ["taskset", "-c", PLACE["wrk"], "wrk", f"-t{PLACE['wrk_threads']}", f"-c{connections}",
           f"-d{duration}s", "--latency", "-s", tails_script()]
    if close:
        cmd += ["-H", "Connection: close"]
    cmd.append(f"http://127.0.0.1:{port}{path}")
    before = os.times()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    after = os.times()
    wrk_cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    requests = None
    for line in out.splitlines():
        if "requests in" in line:
            requests = int(line.split()[0])
        if line.startswith("webscope-tails") and tails is not None:
            tails["p99_us"], tails["p999_us"] = (float(x) for x in line.split()[1:3])
        if "Non-2xx" in line or "Socket errors" in line:
            print(f"    wrk: {line.strip()}", file=sys.stderr)
    if requests is None:
        raise RuntimeError("cannot read wrk output:\n" + out)
    return requests, wrk_cpu


def run_mix(binary, fileset, port, connections, duration, out, tails=None):
    """webscope load with the file set's mix, one thread on PLACE's wrk CPU; (requests, cpu s)."""
    cmd = ["taskset", "-c", PLACE["wrk"], binary, "load", "--fileset", fileset, "--base",
           f"http://127.0.0.1:{port}/specweb96/", "-c", str(connections), "-t", "1", "-d", f"{duration}s",
           "--quiet", "--json", out]
    before = os.times()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = os.times()
    with open(out) as f:
        report = json.load(f)
    errors = sum(v for v in report["errors"].values() if isinstance(v, int))
    if errors:
        print(f"    webscope load: {errors} errors", file=sys.stderr)
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if tails is not None:
        tails["p99_us"], tails["p999_us"] = report["latency_us"]["p99"], report["latency_us"]["p999"]
    return report["requests"], cpu


def measure(server, path, close, args, connections=None):
    connections = connections or args.connections
    if path == MIX:
        return measure_mix(server, args, connections)
    # A short warm-up so caches and the page cache are hot, then the measured run.
    run_wrk(server.port, path, close, connections, 1)
    t0 = cpu_ticks(server.pid)
    start = time.time()
    tails = {}
    requests, wrk_cpu = run_wrk(server.port, path, close, connections, args.duration, tails)
    elapsed = time.time() - start
    t1 = cpu_ticks(server.pid)
    server_cpu = (t1 - t0) / TICK
    return {
        "rps": requests / elapsed,
        "cpu_us": server_cpu * 1e6 / max(requests, 1),
        "server_util": server_cpu / elapsed,
        "wrk_util": wrk_cpu / elapsed,
        **tails,
    }


# The SPECweb96 scenario's path: the mix comes from the file set, not from one URL.
MIX = "SPECweb96"


def measure_mix(server, args, connections):
    out = os.path.join(args.work, "mix.json")
    run_mix(args.binary, args.fileset, server.port, connections, 1, out)
    t0 = cpu_ticks(server.pid)
    start = time.time()
    tails = {}
    requests, gen_cpu = run_mix(args.binary, args.fileset, server.port, connections, args.duration, out,
                                tails)
    elapsed = time.time() - start
    server_cpu = (cpu_ticks(server.pid) - t0) / TICK
    return {
        "rps": requests / elapsed,
        "cpu_us": server_cpu * 1e6 / max(requests, 1),
        "server_util": server_cpu / elapsed,
        "wrk_util": gen_cpu / elapsed,
        **tails,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="alternations per scenario (default 3)")
    parser.add_argument("--duration", type=int, default=5, help="seconds per run (default 5)")
    parser.add_argument("--connections", type=int, default=50, help="wrk connections (default 50)")
    parser.add_argument("--binary", default=None, help="webscope binary (default: build release)")
    parser.add_argument("--only", default=None, help="run only scenarios whose title contains this text")
    parser.add_argument("--io", choices=("default", "epoll", "uring", "both", "all"), default="default",
                        help="webscope's engine(s) to measure: its default, one by name, both by name, "
                             "or all three (default: default)")
    parser.add_argument("--before", default=None, metavar="BINARY",
                        help="another webscope build, measured on its default engine as webscope-before")
    parser.add_argument("--ceiling", action="store_true",
                        help="also measure the minimal responder (1 KiB keep-alive only)")
    parser.add_argument("--scaling", action="store_true",
                        help="req/s at two workers over one (1 KiB keep-alive, both cores shared)")
    args = parser.parse_args()
    ensure_tools()
    binary = webscope_binary(args.binary)
    if args.scaling:
        scaling(binary, args)
        return
    responder = None
    if args.ceiling:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "webscope-server", "--example",
                        "minimal_responder"], cwd=ROOT, check=True)
        responder = os.path.join(os.path.dirname(binary), "examples", "minimal_responder")
    work = tempfile.mkdtemp(prefix="webscope-bench-")
    docroot = make_docroot(work, {"1k.bin": 1024, "100k.bin": 100 * 1024})
    # The SPECweb96 set lives in the docroot too, so every server serves both.
    args.binary, args.work, args.fileset = binary, work, os.path.join(docroot, "specweb96")
    subprocess.run([binary, "fileset", "specweb96", "--out", args.fileset, "--ops", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    # (title, path, close, connections: None for --connections); the one-connection runs show
    # latency tails a single client sees (a 40 ms delayed-ACK stall hid behind good CPU figures).
    scenarios = [("1 KiB keep-alive", "/1k.bin", False, None), ("100 KiB keep-alive", "/100k.bin", False, None),
                 ("1 KiB keep-alive, 1 connection", "/1k.bin", False, 1),
                 ("100 KiB keep-alive, 1 connection", "/100k.bin", False, 1),
                 ("1 KiB close", "/1k.bin", True, None), ("SPECweb96 mix keep-alive", MIX, False, None)]
    engines = {"default": [None], "epoll": ["epoll"], "uring": ["uring"], "both": ["epoll", "uring"],
               "all": [None, "epoll", "uring"]}[args.io]
    makers, ours = [], []
    for engine in engines:
        name = "webscope" if engine is None else f"webscope-{engine}"
        extra = [] if engine is None else ["--io", engine]
        makers.append(lambda extra=extra, name=name: Webscope(binary, docroot, work, extra, name))
        ours.append(name)
    if args.before:
        makers.append(lambda: Webscope(args.before, docroot, work, [], "webscope-before"))
        ours.append("webscope-before")
    makers += [lambda: Nginx(docroot, work, True), lambda: Nginx(docroot, work, False)]
    print(f"wrk -t1 -c{args.connections} -d{args.duration}s on CPU 1 (the mix: webscope load -t1 -c{args.connections}), "
          f"servers (one worker) on CPU 0, {args.pairs} alternations; medians")
    try:
        for title, path, close, connections in scenarios:
            if args.only and args.only not in title:
                continue
            results = {}
            these = list(makers)
            if responder and path == "/1k.bin" and not close and connections is None:
                these.append(lambda: Responder(responder))
            for rep in range(args.pairs):
                for make in these:
                    server = make()
                    try:
                        r = measure(server, path, close, args, connections)
                    finally:
                        server.stop()
                    results.setdefault(server.name, []).append(r)
            print(f"\n{title}")
            print(f"  {'server':20} {'req/s':>10} {'CPU-us/req':>11} {'server CPU':>11} {'gen CPU':>8} "
                  f"{'p99 ms':>8} {'p99.9 ms':>9}")
            med = {}
            for name, runs in results.items():
                m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                spread = (min(r["cpu_us"] for r in runs), max(r["cpu_us"] for r in runs))
                med[name] = m
                print(f"  {name:20} {m['rps']:10.0f} {m['cpu_us']:11.2f} {m['server_util']*100:10.0f}% "
                      f"{m['wrk_util']*100:7.0f}% {m.get('p99_us', float('nan'))/1e3:8.2f} "
                      f"{m.get('p999_us', float('nan'))/1e3:9.2f}   (CPU-us/req {spread[0]:.2f}..{spread[1]:.2f})")
            best = min((n for n in med if n.startswith("nginx")), key=lambda n: med[n]["cpu_us"])
            for us in ours:
                if "minimal-responder" in med:
                    print(f"  {us} / minimal-responder: CPU per request "
                          f"{med[us]['cpu_us'] / med['minimal-responder']['cpu_us']:.2f} x")
                ratio = med[us]["cpu_us"] / med[best]["cpu_us"]
                print(f"  {us} / {best}: CPU per request {ratio:.2f} x, req/s "
                      f"{med[us]['rps'] / med[best]['rps']:.2f} x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def scaling(binary, args):
    """One worker against two, everything on both cores: req/s ratio per server."""
    PLACE.update(server="0,1", wrk="0,1", wrk_threads=2)
    work = tempfile.mkdtemp(prefix="webscope-bench-")
    docroot = make_docroot(work, {"1k.bin": 1024})
    makers = []
    engines = {"default": [None], "epoll": ["epoll"], "uring": ["uring"], "both": ["epoll", "uring"],
               "all": [None, "epoll", "uring"]}[args.io]
    for workers in (1, 2):
        for engine in engines:
            name = "webscope" if engine is None else f"webscope-{engine}"
            extra = [] if engine is None else ["--io", engine]
            makers.append((workers, lambda w=workers, e=extra, n=name: Webscope(binary, docroot, work, e, n,
                                                                                 workers=w)))
        makers.append((workers, lambda w=workers: Nginx(docroot, work, False, workers=w)))
    print(f"1 KiB keep-alive, wrk -t2 -c{args.connections} -d{args.duration}s, servers and wrk sharing "
          f"CPUs 0-1, {args.pairs} alternations; medians")
    rps = {}
    try:
        for _ in range(args.pairs):
            for workers, make in makers:
                server = make()
                try:
                    r = measure(server, "/1k.bin", False, args)
                finally:
                    server.stop()
                rps.setdefault((server.name, workers), []).append(r["rps"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"  {'server':20} {'1 worker':>10} {'2 workers':>10} {'ratio':>6}")
    for name in dict.fromkeys(n for n, _ in rps):
        one, two = (statistics.median(rps[(name, w)]) for w in (1, 2))
        print(f"  {name:20} {one:10.0f} {two:10.0f} {two / one:6.2f}   "
              f"(1: {' '.join(f'{x:.0f}' for x in rps[(name, 1)])}; 2: {' '.join(f'{x:.0f}' for x in rps[(name, 2)])})")


if __name__ == "__main__":
    main()
