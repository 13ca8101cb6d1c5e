#!/usr/bin/env python3
"""webscope serve's large files over HTTP/2 against HTTPS/1.1, and its memory under clients that
open huge HTTP/2 windows and never read (#28 §1).

`throughput`: one worker pinned to CPU 0 serves a 10 MiB file over TLS; h2load on CPU 1 fetches
it over HTTP/2 (`-m 1`) and over HTTP/1.1 (`--h1`), the same connections and requests, the two
alternated; per run it prints MB/s (h2load's) and the server's CPU seconds per GB sent
(utime+stime from /proc/PID/stat around the run).

`memory`: the server's RSS (VmRSS, /proc/PID/status) at rest, while 10 hostile HTTP/2 clients
(INITIAL_WINDOW_SIZE 2^31-1, a connection WINDOW_UPDATE to match, 128 HEADERS each for the
10 MiB file, then nothing read) are connected, and after they leave; then, if gdb is there,
after a `malloc_trim(0)` called into the server from outside: what glibc's allocator kept
that it could give back.

Usage: bench/h2_large_files.py throughput|memory [--binary PATH] [--runs 3] [--requests 200]
       [--connections 4] [--hold 6] [--send-timeout 3s]
Needs: h2load (nghttp2-client), openssl, the Python `h2` package (pip install h2); gdb for the
trim. Traffic stays on 127.0.0.1.
"""
import argparse
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_vs_nginx import cpu_ticks, free_port, make_docroot, wait_port, webscope_binary  # noqa: E402
from serve_tls_vs_nginx import certificate  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
BIG = 10 << 20


def start_server(binary, docroot, cert, key, extra=()):
    port = free_port()
    proc = subprocess.Popen(
        ["taskset", "-c", "0", binary, "serve", "--listen", f"127.0.0.1:{port}", "--workers", "1",
         "--root", docroot, "--tls-cert", cert, "--tls-key", key, "--access-log", "off", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return proc, port


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def h2load(port, h1, requests, connections):
    cmd = ["taskset", "-c", "1", "h2load", "-n", str(requests), "-c", str(connections), "-m", "1",
           f"https://127.0.0.1:{port}/big.bin"]
    if h1:
        cmd.insert(4, "--h1")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    done = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", out)
    speed = re.search(r"finished in ([\d.]+)m?s, [\d.]+ req/s, ([\d.]+)([KMG]?B)/s", out)
    if not done or not speed or done.group(1) != str(requests):
        raise RuntimeError(f"h2load did not finish its requests:\n{out}")
    scale = {"B": 1e-6, "KB": 1e-3, "MB": 1.0, "GB": 1e3}[speed.group(3)]
    return float(speed.group(2)) * scale


def throughput(binary, docroot, cert, key, args):
    proc, port = start_server(binary, docroot, cert, key)
    try:
        h2load(port, False, 4, 1)  # warm the page cache and the session
        print(f"{'protocol':<10} {'MB/s':>8} {'server CPU s':>13} {'CPU s per GB':>13}")
        for run in range(args.runs):
            for h1 in (False, True):
                before = cpu_ticks(proc.pid)
                mbs = h2load(port, h1, args.requests, args.connections)
                cpu = (cpu_ticks(proc.pid) - before) / TICK
                gb = args.requests * BIG / 1e9
                name = "HTTP/1.1" if h1 else "HTTP/2"
                print(f"{name:<10} {mbs:8.0f} {cpu:13.2f} {cpu / gb:13.2f}")
    finally:
        proc.terminate()
        proc.wait()


def hostile(port, streams=128):
    """One client that asks for `streams` copies of the big file with windows of 2^31-1, and
    never reads."""
    import h2.config
    import h2.connection
    import h2.settings

    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 2**31 - 1})
    conn.increment_flow_control_window(2**31 - 1 - 65535)
    headers = [(":method", "GET"), (":scheme", "https"), (":authority", "localhost"),
               (":path", "/big.bin")]
    for _ in range(streams):
        conn.send_headers(conn.get_next_available_stream_id(), headers, end_stream=True)
    sock.sendall(conn.data_to_send())
    return sock


def trim(pid):
    """Calls malloc_trim(0) inside the server (gdb): what the allocator gives back."""
    out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (int) malloc_trim(0)"],
                         capture_output=True, text=True)
    return out.returncode == 0


def memory(binary, docroot, cert, key, args):
    extra = ["--send-timeout", args.send_timeout] if args.send_timeout else []
    proc, port = start_server(binary, docroot, cert, key, extra)
    pid = proc.pid
    try:
        h2load(port, False, 4, 1)
        time.sleep(0.5)
        print(f"at rest (after 4 ordinary requests): {rss_kib(pid) / 1024:.0f} MiB")
        clients = [hostile(port) for _ in range(10)]
        began = time.time()
        peak = 0
        while time.time() - began < args.hold:
            time.sleep(0.5)
            rss = rss_kib(pid)
            peak = max(peak, rss)
        print(f"10 hostile clients, {args.hold:.0f} s: peak {peak / 1024:.0f} MiB, "
              f"now {rss_kib(pid) / 1024:.0f} MiB")
        for c in clients:
            c.close()
        for wait in (1, 5, 10):
            time.sleep(wait - (time.time() - began - args.hold))
            print(f"{wait:>2} s after they left: {rss_kib(pid) / 1024:.0f} MiB")
        if trim(pid):
            print(f"after malloc_trim(0) from gdb: {rss_kib(pid) / 1024:.0f} MiB")
        h2load(port, False, 4, 1)
        print(f"and it still serves: {rss_kib(pid) / 1024:.0f} MiB")
    finally:
        proc.terminate()
        proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["throughput", "memory"])
    parser.add_argument("--binary")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--hold", type=float, default=6.0,
                        help="seconds the hostile clients stay (memory)")
    parser.add_argument("--send-timeout",
                        help="the server's --send-timeout (memory; e.g. 3s: the clients are cut)")
    args = parser.parse_args()
    binary = webscope_binary(args.binary)
    with tempfile.TemporaryDirectory() as work:
        docroot = make_docroot(work, {"big.bin": BIG})
        cert, key = certificate(work)
        (throughput if args.what == "throughput" else memory)(binary, docroot, cert, key, args)


if __name__ == "__main__":
    main()
