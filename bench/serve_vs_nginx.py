#!/usr/bin/env python3
"""webscope serve vs nginx, side by side: server CPU-microseconds per request.

Serves the same 1 KiB and 100 KiB files from `webscope serve` and from nginx (tuned: one
worker, tcp_nopush, open_file_cache, buffered access log, deferred accept as webscope has by
default; once with sendfile on and once off, the better of the two counting), pins each server to CPU 0 and wrk to CPU 1, alternates the
servers (A B C A B C ...) and prints, per scenario, the median req/s, the server's
CPU-microseconds per request (utime+stime from /proc/PID/stat before and after), and both
processes' CPU utilisation. On 2 cores the load generator may saturate before the server does,
so CPU per request is the figure that compares servers honestly.

"webscope" serves with `--io epoll`; with --io uring (or both), webscope serves with `--io uring`
(as "webscope-uring"), its default engine where the kernel allows it.

With --scaling, 1 KiB keep-alive only: each server with one worker and with two, nothing pinned
(servers and wrk -t2 share both cores), and the req/s at two workers over one, per server: how
far each scales when the generator competes for the same cores.

Usage: bench/serve_vs_nginx.py [--pairs 3] [--duration 5] [--connections 50] [--io epoll|uring|both]
                              [--ceiling] [--scaling]
Needs: nginx and wrk (installed with apt-get if missing and running as root), cargo.
Traffic stays on 127.0.0.1.
"""
import argparse
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


def run_wrk(port, path, close, connections, duration):
    """Runs wrk where PLACE says; returns (requests, wrk cpu seconds)."""
    cmd = ["taskset", "-c", PLACE["wrk"], "wrk", f"-t{PLACE['wrk_threads']}", f"-c{connections}",
           f"-d{duration}s", "--latency"]
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
        if "Non-2xx" in line or "Socket errors" in line:
            print(f"    wrk: {line.strip()}", file=sys.stderr)
    if requests is None:
        raise RuntimeError("cannot read wrk output:\n" + out)
    return requests, wrk_cpu


def measure(server, path, close, args):
    # A short warm-up so caches and the page cache are hot, then the measured run.
    run_wrk(server.port, path, close, args.connections, 1)
    t0 = cpu_ticks(server.pid)
    start = time.time()
    requests, wrk_cpu = run_wrk(server.port, path, close, args.connections, args.duration)
    elapsed = time.time() - start
    t1 = cpu_ticks(server.pid)
    server_cpu = (t1 - t0) / TICK
    return {
        "rps": requests / elapsed,
        "cpu_us": server_cpu * 1e6 / max(requests, 1),
        "server_util": server_cpu / elapsed,
        "wrk_util": wrk_cpu / elapsed,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="alternations per scenario (default 3)")
    parser.add_argument("--duration", type=int, default=5, help="seconds per run (default 5)")
    parser.add_argument("--connections", type=int, default=50, help="wrk connections (default 50)")
    parser.add_argument("--binary", default=None, help="webscope binary (default: build release)")
    parser.add_argument("--only", default=None, help="run only scenarios whose title contains this text")
    parser.add_argument("--io", choices=("epoll", "uring", "both"), default="epoll",
                        help="webscope's engine(s) to measure (default epoll)")
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
    scenarios = [("1 KiB keep-alive", "/1k.bin", False), ("100 KiB keep-alive", "/100k.bin", False),
                 ("1 KiB close", "/1k.bin", True)]
    makers = []
    if args.io in ("epoll", "both"):
        makers.append(lambda: Webscope(binary, docroot, work, ["--io", "epoll"]))
    if args.io in ("uring", "both"):
        makers.append(lambda: Webscope(binary, docroot, work, ["--io", "uring"], "webscope-uring"))
    makers += [lambda: Nginx(docroot, work, True), lambda: Nginx(docroot, work, False)]
    ours = [n for n, on in (("webscope", args.io != "uring"), ("webscope-uring", args.io != "epoll")) if on]
    print(f"wrk -t1 -c{args.connections} -d{args.duration}s on CPU 1, servers (one worker) on CPU 0, "
          f"{args.pairs} alternations; medians")
    try:
        for title, path, close in scenarios:
            if args.only and args.only not in title:
                continue
            results = {}
            these = list(makers)
            if responder and path == "/1k.bin" and not close:
                these.append(lambda: Responder(responder))
            for rep in range(args.pairs):
                for make in these:
                    server = make()
                    try:
                        r = measure(server, path, close, args)
                    finally:
                        server.stop()
                    results.setdefault(server.name, []).append(r)
            print(f"\n{title}")
            print(f"  {'server':20} {'req/s':>10} {'CPU-us/req':>11} {'server CPU':>11} {'wrk CPU':>8}")
            med = {}
            for name, runs in results.items():
                m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                spread = (min(r["cpu_us"] for r in runs), max(r["cpu_us"] for r in runs))
                med[name] = m
                print(f"  {name:20} {m['rps']:10.0f} {m['cpu_us']:11.2f} {m['server_util']*100:10.0f}% "
                      f"{m['wrk_util']*100:7.0f}%   (CPU-us/req {spread[0]:.2f}..{spread[1]:.2f})")
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
    for workers in (1, 2):
        if args.io in ("epoll", "both"):
            makers.append((workers, lambda w=workers: Webscope(binary, docroot, work, ["--io", "epoll"],
                                                                workers=w)))
        if args.io in ("uring", "both"):
            makers.append((workers, lambda w=workers: Webscope(binary, docroot, work, ["--io", "uring"],
                                                                "webscope-uring", workers=w)))
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
