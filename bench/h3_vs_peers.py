#!/usr/bin/env python3
"""webscope serve --http3 against Caddy's HTTP/3 and against its own HTTP/2, and the load
generator's HTTP/3 efficiency (#50 §5).

One server at a time on CPU 0 (webscope serve: one worker; Caddy: GOMAXPROCS=1), webscope
load on CPU 1 with one thread, closed loop, keep-alive, a 1 KiB file; the three servers
alternated, A B C A B C, `--runs` times. Per run it prints the requests per second, the
server's CPU microseconds per request (utime+stime from /proc/PID/stat around the run) and the
generator's requests per CPU-second (its own report). Ratios, not absolute figures, are what
this machine can tell (its load moves the absolutes).

Usage: bench/h3_vs_peers.py [--binary PATH] [--runs 3] [--duration 5s] [-c 4] [-M 16]
Needs: caddy (Debian's: apt-get install caddy), openssl, taskset. Traffic stays on loopback.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_vs_nginx import cpu_ticks, free_port, wait_port, webscope_binary  # noqa: E402
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


def webscope_serve(binary, root, cert, key):
    port = free_port()
    return Server("webscope", [binary, "serve", "--root", root, "--listen", f"127.0.0.1:{port}",
                               "--workers", "1", "--access-log", "off", "--tls-cert", cert,
                               "--tls-key", key, "--http3"], port, cert)


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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--duration", default="5s")
    p.add_argument("-c", "--connections", type=int, default=4)
    p.add_argument("-M", "--streams", type=int, default=16)
    args = p.parse_args()
    binary = webscope_binary(args.binary)
    with tempfile.TemporaryDirectory() as work:
        root = os.path.join(work, "root")
        os.mkdir(root)
        with open(os.path.join(root, "1k.bin"), "wb") as f:
            f.write(bytes(i % 251 for i in range(1024)))
        cert, key = certificate(work)
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


if __name__ == "__main__":
    main()
