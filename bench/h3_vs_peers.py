#!/usr/bin/env python3
"""webscope serve --http3 against Caddy's HTTP/3 and against its own HTTP/2, and the load
generator's HTTP/3 efficiency (#50 §5).

One server at a time on CPU 0 (webscope serve: one worker; Caddy: GOMAXPROCS=1), webscope
load on CPU 1 with one thread, closed loop, keep-alive, a 1 KiB file; the three servers
alternated, A B C A B C, `--runs` times. Per run it prints the requests per second, the
server's CPU microseconds per request (utime+stime from /proc/PID/stat around the run) and the
generator's requests per CPU-second (its own report). Ratios, not absolute figures, are what
this machine can tell (its load moves the absolutes).

The clients part (`--part clients`): the same `serve --http3` (one worker, CPU 0) driven by
three HTTP/3 clients in turn on CPU 1, alternated, `-c` connections x `-M` streams of the 1 KiB
file: webscope's generator (`load --http3`, one thread), a minimal quinn + h3 client written
for this bench (`crates/quic/examples/h3_min_client.rs`: one thread, quinn's defaults, no
figures kept) and oha built with HTTP/3 (`--oha PATH`, else `oha` on PATH or /work/oha/bin;
said and left out when missing: `cargo install oha --version 1.16.0 --features http3 --locked`
takes ~9 min, too long for CI). Per run: requests per second and the client's requests per
CPU-second (its utime+stime from wait4, the same measure for the three), and the p50/p99 of
the two that keep latencies (issue 50 saw oha's req/s against Caddy carry a fixed ~30 s
tail; against `serve --http3` without GOAWAY it ended with -z here). `--perf DIR`
adds one run of each client under `perf record -g` and prints its top symbols (self time).

Usage: bench/h3_vs_peers.py [--binary PATH] [--runs 3] [--duration 5s] [-c 4] [-M 16]
                            [--part servers|clients|both] [--oha PATH] [--perf DIR]
Needs: caddy (Debian's: apt-get install caddy), openssl, taskset, cargo (the minimal client),
perf for --perf. Traffic stays on loopback.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_vs_nginx import ROOT, cpu_ticks, free_port, wait_port, webscope_binary  # noqa: E402
from serve_tls_vs_nginx import certificate  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


class Server:
    def __init__(self, name, cmd, port, ca, env=None, host="127.0.0.1"):
        self.name, self.port, self.ca, self.host = name, port, ca, host
        self.proc = subprocess.Popen(["taskset", "-c", "0", *cmd], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, limit=20.0)
        self.pid = self.proc.pid

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=15)


def webscope_serve(binary, root, cert, key, more=()):
    port = free_port()
    return Server("webscope", [binary, "serve", "--root", root, "--listen", f"127.0.0.1:{port}",
                               "--workers", "1", "--access-log", "off", "--tls-cert", cert,
                               "--tls-key", key, "--http3", *more], port, cert)


# The clients part: no GOAWAY after serve's 10 000 requests a connection. The minimal client
# does not reconnect (its streams ended there, after ~1 s), and oha counted the requests the
# GOAWAY cut as errors.
UNLIMITED = ("--keepalive-requests", "100000000")


def caddy(root, work):
    port = free_port()
    storage = os.path.join(work, "caddy")
    conf = os.path.join(work, "Caddyfile")
    with open(conf, "w") as f:
        f.write("{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n"
                f"\tstorage file_system {storage}\n\tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\n"
                f"https://localhost:{port} {{\n\ttls internal\n\troot * {root}\n\tfile_server\n}}\n")
    env = dict(os.environ, HOME=work, XDG_DATA_HOME=os.path.join(work, "xdg"),
               XDG_CONFIG_HOME=os.path.join(work, "xdg"), GOMAXPROCS="1")
    ca = os.path.join(storage, "pki/authorities/local/root.crt")
    server = Server("caddy", ["caddy", "run", "--adapter", "caddyfile", "--config", conf], port, ca,
                    env=env, host="localhost")
    deadline = time.time() + 20
    while not os.path.exists(ca) and time.time() < deadline:
        time.sleep(0.1)
    return server


def load(binary, server, protocol, args, work):
    out = os.path.join(work, "r.json")
    cmd = ["taskset", "-c", "1", binary, "load", f"https://{server.host}:{server.port}/1k.bin",
           protocol, "-M", str(args.streams), "-c", str(args.connections), "-t", "1",
           "-d", args.duration, "--cacert", server.ca, "--json", out]
    before = cpu_ticks(server.pid)
    subprocess.run(cmd, check=True, capture_output=True)
    used = (cpu_ticks(server.pid) - before) / TICK
    with open(out) as f:
        r = json.load(f)
    requests = r["requests"]
    return {
        "rps": r["requests_per_s"],
        "server_us": used * 1e6 / max(requests, 1),
        "gen_per_cpu_s": requests / max(r["generator_cpu_s"], 1e-9),
        "errors": r["errors"]["total"],
    }


def site(work):
    root = os.path.join(work, "root")
    os.mkdir(root)
    with open(os.path.join(root, "1k.bin"), "wb") as f:
        f.write(bytes(i % 251 for i in range(1024)))
    return root


def servers(binary, args, work, root, cert, key):
    """serve --http3 against Caddy's HTTP/3 and its own HTTP/2: server CPU per request."""
    cases = [("webscope HTTP/3", "webscope", "--http3"), ("caddy HTTP/3", "caddy", "--http3"),
             ("webscope HTTP/2", "webscope", "--http2")]
    results = {name: [] for name, _, _ in cases}
    for run in range(args.runs):
        for name, kind, protocol in cases:
            server = webscope_serve(binary, root, cert, key) if kind == "webscope" else caddy(root, work)
            try:
                r = load(binary, server, protocol, args, work)
            finally:
                server.stop()
            results[name].append(r)
            print(f"run {run + 1} {name:16} {r['rps']:9.0f} req/s  server {r['server_us']:6.1f} CPU-us/req"
                  f"  generator {r['gen_per_cpu_s']:8.0f} req/CPU-s  errors {r['errors']}", flush=True)
    print("\nmedians:")
    med = {n: {k: statistics.median(x[k] for x in rs) for k in ("rps", "server_us", "gen_per_cpu_s")}
           for n, rs in results.items()}
    for name, m in med.items():
        print(f"  {name:16} {m['rps']:9.0f} req/s  server {m['server_us']:6.1f} CPU-us/req"
              f"  generator {m['gen_per_cpu_s']:8.0f} req/CPU-s")
    ours, theirs, h2 = (med["webscope HTTP/3"]["server_us"], med["caddy HTTP/3"]["server_us"],
                        med["webscope HTTP/2"]["server_us"])
    print(f"  serve --http3 CPU per request: {ours / theirs:.2f} x Caddy's (goal: at most 0.8),"
          f" {ours / h2:.2f} x its own HTTP/2")


def minimal_client():
    """The bench's minimal quinn + h3 client, built in release (not part of the binary)."""
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "webscope-quic", "--example", "h3_min_client"],
                   cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "release", "examples", "h3_min_client")


def oha_binary(given):
    """oha with HTTP/3, or None (said) when it is not installed."""
    for candidate in (given, shutil.which("oha"), "/work/oha/bin/oha"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    print("oha: not found (cargo install oha --version 1.16.0 --features http3 --locked --root DIR,"
          " ~9 min, then --oha DIR/bin/oha): left out", flush=True)
    return None


def timed(cmd, out, perf=None):
    """Runs `cmd` on CPU 1 (under perf record -g into `perf` if given); its stdout to `out`.
    Returns its exit status and its CPU seconds (utime + stime, from wait4)."""
    if perf:
        cmd = ["perf", "record", "-q", "-g", "-o", perf, "--", *cmd]
    with open(out, "w") as f:
        proc = subprocess.Popen(["taskset", "-c", "1", *cmd], stdout=f, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def client_generator(binary, server, args, work, perf=None):
    out = os.path.join(work, "r.json")
    cmd = [binary, "load", f"https://{server.host}:{server.port}/1k.bin", "--http3",
           "-M", str(args.streams), "-c", str(args.connections), "-t", "1", "-d", args.duration,
           "--cacert", server.ca, "--json", out]
    _, cpu = timed(cmd, os.path.join(work, "gen.out"), perf)
    with open(out) as f:
        r = json.load(f)
    latency = r["latency_us"]
    return {"requests": r["requests"], "seconds": r["duration_s"], "cpu": cpu,
            "p50_ms": latency["p50"] / 1e3, "p99_ms": latency["p99"] / 1e3, "errors": r["errors"]["total"]}


def client_minimal(exe, server, args, work, perf=None):
    out = os.path.join(work, "min.out")
    cmd = [exe, f"127.0.0.1:{server.port}", "localhost", "/1k.bin", server.ca, str(args.connections),
           str(args.streams), str(seconds(args.duration))]
    code, cpu = timed(cmd, out, perf)
    with open(out) as f:
        said = dict(kv.split("=") for kv in f.read().split())
    if code != 0 or "requests" not in said:
        raise RuntimeError(f"h3_min_client failed ({code}): {said}")
    return {"requests": int(said["requests"]), "seconds": float(said["seconds"]), "cpu": cpu,
            "p50_ms": None, "p99_ms": None, "errors": int(said["errors"])}


def client_oha(exe, server, args, work, perf=None):
    out = os.path.join(work, "oha.json")
    cmd = [exe, f"https://localhost:{server.port}/1k.bin", "--http-version", "3", "-c", str(args.connections),
           "-p", str(args.streams), "-z", args.duration, "--no-tui", "--output-format", "json",
           "--cacert", server.ca, "--worker-threads", "1", "-o", out]
    code, cpu = timed(cmd, os.path.join(work, "oha.out"), perf)
    if code != 0:
        raise RuntimeError(f"oha failed ({code})")
    with open(out) as f:
        r = json.load(f)
    # The bytes checked as far as oha tells them: every response the file's size.
    if r["summary"]["sizePerRequest"] not in (None, 1024):
        raise RuntimeError(f"oha read {r['summary']['sizePerRequest']} bytes a response, not 1024")
    ok = sum(r["statusCodeDistribution"].values())
    latency = r["latencyPercentiles"]
    return {"requests": ok, "seconds": r["summary"]["total"], "cpu": cpu,
            "p50_ms": latency["p50"] * 1e3, "p99_ms": latency["p99"] * 1e3,
            # The requests in flight at -z's end are aborted: the run's end, not errors.
            "errors": sum(n for e, n in r["errorDistribution"].items() if e != "aborted due to deadline")}


def seconds(duration):
    """`5s`, `500ms` or `2m` as seconds."""
    for unit, scale in (("ms", 1e-3), ("s", 1.0), ("m", 60.0)):
        if duration.endswith(unit):
            return float(duration[: -len(unit)]) * scale
    return float(duration)


# Where a client's time goes, by the symbol's crate or library (first match wins).
PARTS = [("h3 (QPACK, frames)", ("h3::", "<h3::", "h3_quinn", "<h3_quinn")),
         ("quinn", ("quinn", "<quinn")),
         ("crypto (ring, rustls)", ("ring_", "ring::", "<ring", "rustls", "<rustls", "_aesni", "aes_", "gcm_",
                                    "chacha", "poly1305")),
         ("tokio", ("tokio", "<tokio")),
         ("the client's own", ("webscope", "<webscope", "h3_min_client", "oha", "<oha", "hdrhistogram",
                               "<hdrhistogram")),
         ("malloc/free", ("malloc", "_int_malloc", "_int_free", "cfree", "free", "_rjem", "do_rallocx",
                          "realloc")),
         ("memcpy/memmove", ("__memmove", "__memcpy", "__memset"))]


def profile(data, n=10):
    """The `n` symbols with the most self time in a perf.data file, then the time by part
    (PARTS; the kernel's symbols as one)."""
    report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "symbol",
                             "--stdio", "-g", "none", "--percent-limit", "0.01"],
                            capture_output=True, text=True)
    rows = []
    for line in report.stdout.splitlines():
        fields = line.split(None, 2)
        if len(fields) == 3 and fields[0].endswith("%") and not line.startswith("#"):
            symbol = fields[2].rstrip(" -")
            rows.append((float(fields[0][:-1]), fields[1], symbol))
    for share, kind, symbol in rows[:n]:
        print(f"  {share:5.2f}%  {kind} {symbol[:110]}")
    parts = {}
    for share, kind, symbol in rows:
        name = "kernel" if kind == "[k]" else next(
            (part for part, prefixes in PARTS if symbol.startswith(prefixes)), "other")
        parts[name] = parts.get(name, 0.0) + share
    print("  by part: " + ", ".join(f"{name} {share:.0f}%" for name, share in
                                     sorted(parts.items(), key=lambda p: -p[1])))


def clients(binary, args, work, root, cert, key):
    """The generator against a minimal quinn client and oha: requests per CPU-second, p50/p99."""
    cases = [("webscope load", client_generator, binary), ("minimal quinn", client_minimal, minimal_client())]
    oha = oha_binary(args.oha)
    if oha:
        cases.append(("oha", client_oha, oha))
    results = {name: [] for name, _, _ in cases}
    for run in range(args.runs):
        for name, measure, exe in cases:
            server = webscope_serve(binary, root, cert, key, UNLIMITED)
            try:
                r = measure(exe, server, args, work)
            finally:
                server.stop()
            results[name].append(r)
            print(f"run {run + 1} {name:14} {r['requests'] / r['seconds']:9.0f} req/s"
                  f"  {r['requests'] / max(r['cpu'], 1e-9):8.0f} req/CPU-s  {latencies(r)}"
                  f"  errors {r['errors']}", flush=True)
    print("\nmedians:")
    per_cpu = {}
    for name, rs in results.items():
        per_cpu[name] = statistics.median(r["requests"] / max(r["cpu"], 1e-9) for r in rs)
        rps = statistics.median(r["requests"] / r["seconds"] for r in rs)
        print(f"  {name:14} {rps:9.0f} req/s  {per_cpu[name]:8.0f} req/CPU-s")
    print(f"  generator: {per_cpu['webscope load'] / per_cpu['minimal quinn']:.2f} x the minimal client's"
          " requests per CPU-second")
    if args.perf:
        os.makedirs(args.perf, exist_ok=True)
        for name, measure, exe in cases:
            data = os.path.join(args.perf, name.replace(" ", "_") + ".data")
            server = webscope_serve(binary, root, cert, key, UNLIMITED)
            try:
                measure(exe, server, args, work, perf=data)
            finally:
                server.stop()
            print(f"\n{name}: top symbols (self), {data}")
            profile(data)


def latencies(r):
    if r["p50_ms"] is None:
        return "p50      -  p99      -"
    return f"p50 {r['p50_ms']:6.2f}  p99 {r['p99_ms']:6.2f} ms"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--duration", default="5s")
    p.add_argument("-c", "--connections", type=int, default=4)
    p.add_argument("-M", "--streams", type=int, default=16)
    p.add_argument("--part", choices=("servers", "clients", "both"), default="both")
    p.add_argument("--oha")
    p.add_argument("--perf")
    args = p.parse_args()
    binary = webscope_binary(args.binary)
    with tempfile.TemporaryDirectory() as work:
        root = site(work)
        cert, key = certificate(work)
        if args.part in ("servers", "both"):
            servers(binary, args, work, root, cert, key)
        if args.part in ("clients", "both"):
            clients(binary, args, work, root, cert, key)


if __name__ == "__main__":
    main()
