#!/usr/bin/env python3
"""webscope serve vs nginx over TLS and HTTP/2, side by side: server CPU-microseconds per request.

Both servers get the same P-256 certificate (made here with openssl), one worker pinned to CPU
0, the same 1 KiB and 100 KiB files; nginx with `ssl_session_cache shared:SSL:10m`, `http2 on`
(the `listen ... http2` of nginx < 1.25), open_file_cache and a buffered access log, as in
serve_vs_nginx.py; webscope with its defaults (the kTLS technique is on, and used only where the
kernel has the tls ULP: this script says which way it ran). The load runs on CPU 1: wrk for
HTTPS/1.1 keep-alive (one thread, 50 connections), h2load for HTTP/2 (10 connections x 100
streams), `webscope load --close` for HTTPS with a connection per request (resumed sessions; wrk
cannot resume). The servers alternate (A B A B ...); per scenario it prints the median req/s and
the server's CPU-microseconds per request (utime+stime from /proc/PID/stat around the run).

Usage: bench/serve_tls_vs_nginx.py [--pairs 3] [--duration 5] [--only TEXT] [--binary PATH]
Needs: nginx, wrk, h2load (nghttp2-client), openssl (apt-get installs them when run as root).
Traffic stays on 127.0.0.1.
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_vs_nginx import cpu_ticks, free_port, wait_port, webscope_binary  # noqa: E402

import time  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
# Requests per connection before the server closes it, for both servers: h2load does not
# reconnect after a GOAWAY, so at 10 000 a 10-connection run would stop at 100 000 requests.
KEEPALIVE_REQUESTS = 100_000_000


def ensure_tools():
    wanted = {"nginx": "nginx", "wrk": "wrk", "h2load": "nghttp2-client", "openssl": "openssl"}
    missing = [pkg for tool, pkg in wanted.items()
               if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool)]
    if missing:
        print(f"installing {' '.join(missing)} ...", file=sys.stderr)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, stdout=subprocess.DEVNULL)


def certificate(work):
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-addext", "basicConstraints=critical,CA:FALSE"],
                   check=True, capture_output=True)
    return cert, key


class Webscope:
    def __init__(self, binary, docroot, work, cert, key):
        self.name = "webscope"
        self.port = free_port()
        log = os.path.join(work, "webscope-access.log")
        self.proc = subprocess.Popen(
            ["taskset", "-c", "0", binary, "serve", "--root", docroot, "--listen", f"127.0.0.1:{self.port}",
             "--workers", "1", "--access-log", log, "--tls-cert", cert, "--tls-key", key,
             "--keepalive-requests", str(KEEPALIVE_REQUESTS)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.said = [self.proc.stdout.readline().strip(), self.proc.stdout.readline().strip()]
        wait_port(self.port)
        self.pid = self.proc.pid

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=15)


class Nginx:
    def __init__(self, docroot, work, cert, key, version):
        self.name = "nginx"
        self.port = free_port()
        conf = os.path.join(work, "nginx-tls.conf")
        # nginx 1.25.1 brought `http2 on;`; before it, `listen ... http2`.
        new = version >= (1, 25, 1)
        listen = f"listen 127.0.0.1:{self.port} ssl reuseport deferred{'' if new else ' http2'};"
        with open(conf, "w") as f:
            f.write(f"""
worker_processes 1;
master_process off;
daemon off;
error_log {work}/nginx-error.log;
pid {work}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    include /etc/nginx/mime.types;
    access_log {work}/nginx-access.log combined buffer=64k flush=1s;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests {KEEPALIVE_REQUESTS};
    open_file_cache max=1000 inactive=20s;
    open_file_cache_valid 1s;
    ssl_session_cache shared:SSL:10m;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    server {{
        {listen}
        {'http2 on;' if new else ''}
        root {docroot};
    }}
}}
""")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen(["taskset", "-c", "0", nginx, "-c", conf, "-p", work],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)
        self.pid = self.proc.pid

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def nginx_version():
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    out = subprocess.run([nginx, "-v"], capture_output=True, text=True).stderr
    digits = out.strip().split("/")[-1].split()[0]
    return tuple(int(x) for x in digits.split("."))


def load_cmd(kind, port, path, duration, binary, cert):
    url = f"https://127.0.0.1:{port}{path}"
    if kind == "https":
        return ["taskset", "-c", "1", "wrk", "-t1", "-c50", f"-d{duration}s", url]
    if kind == "h2":
        return ["taskset", "-c", "1", "h2load", "-t1", "-c10", "-m100", f"-D{duration}", url]
    return ["taskset", "-c", "1", binary, "load", url, "--close", "--cacert", cert, "-t", "1", "-c", "20",
            "-d", f"{duration}s"]


def requests_of(kind, out):
    for line in out.splitlines():
        if kind == "https" and "requests in" in line:
            return int(line.split()[0])
        if kind == "h2" and line.startswith("requests:"):
            # requests: N total, N started, N done, N succeeded, ...
            fields = line.replace(",", "").split()
            return int(fields[fields.index("succeeded") - 1])
        if kind == "close" and " requests in " in line:
            return int(line.split()[0])
    raise RuntimeError("cannot read the load's output:\n" + out)


def measure(server, kind, path, args, binary, cert):
    warm = load_cmd(kind, server.port, path, 1, binary, cert)
    subprocess.run(warm, capture_output=True, check=True)
    t0 = cpu_ticks(server.pid)
    start = time.time()
    out = subprocess.run(load_cmd(kind, server.port, path, args.duration, binary, cert),
                         capture_output=True, text=True, check=True).stdout
    elapsed = time.time() - start
    cpu = (cpu_ticks(server.pid) - t0) / TICK
    requests = requests_of(kind, out)
    return {"rps": requests / elapsed, "cpu_us": cpu * 1e6 / max(requests, 1), "util": cpu / elapsed}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--only", default=None, help="run only scenarios whose title contains this")
    parser.add_argument("--binary", default=None, help="webscope binary (default: build release)")
    args = parser.parse_args()
    ensure_tools()
    binary = webscope_binary(args.binary)
    version = nginx_version()
    work = tempfile.mkdtemp(prefix="webscope-tls-bench-")
    docroot = os.path.join(work, "www")
    os.makedirs(docroot)
    for name, size in (("1k.bin", 1024), ("100k.bin", 100 * 1024)):
        with open(os.path.join(docroot, name), "wb") as f:
            f.write(os.urandom(size))
    os.chmod(work, 0o755)
    cert, key = certificate(work)
    scenarios = [("HTTPS keep-alive 1 KiB", "https", "/1k.bin"), ("HTTPS keep-alive 100 KiB", "https", "/100k.bin"),
                 ("HTTP/2 1 KiB", "h2", "/1k.bin"), ("HTTP/2 100 KiB", "h2", "/100k.bin"),
                 ("HTTPS close 1 KiB", "close", "/1k.bin")]
    print(f"servers (one worker) on CPU 0, load on CPU 1, {args.pairs} alternations of {args.duration} s; "
          f"medians; nginx {'.'.join(map(str, version))}")
    try:
        for title, kind, path in scenarios:
            if args.only and args.only not in title:
                continue
            results = {}
            for _ in range(args.pairs):
                for make in (lambda: Webscope(binary, docroot, work, cert, key),
                             lambda: Nginx(docroot, work, cert, key, version)):
                    server = make()
                    try:
                        r = measure(server, kind, path, args, binary, cert)
                        if server.name == "webscope" and not results:
                            print(f"  ({server.said[-1]})")
                    finally:
                        server.stop()
                    results.setdefault(server.name, []).append(r)
            print(f"\n{title}")
            print(f"  {'server':10} {'req/s':>10} {'CPU-us/req':>11} {'server CPU':>11}")
            med = {}
            for name, runs in results.items():
                m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                med[name] = m
                lo, hi = min(r["cpu_us"] for r in runs), max(r["cpu_us"] for r in runs)
                print(f"  {name:10} {m['rps']:10.0f} {m['cpu_us']:11.2f} {m['util']*100:10.0f}%"
                      f"   (CPU-us/req {lo:.2f}..{hi:.2f})")
            print(f"  webscope / nginx: CPU per request {med['webscope']['cpu_us'] / med['nginx']['cpu_us']:.2f} x, "
                  f"req/s {med['webscope']['rps'] / med['nginx']['rps']:.2f} x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
