#!/usr/bin/env python3
"""What the monitor's kernel module (`webscope monitor --kernel`, #49) costs the server.

The embedded server (one worker, pinned to CPU 0) is loaded by `webscope load` (pinned to CPU 1)
at 1 KiB, keep-alive and Connection: close, while `webscope monitor --port P --pid S` runs beside
it with --kernel and without, in pairs whose order alternates (off-on, on-off, ...), so that the
machine's drift falls on both sides alike. The figure is the server's CPU time per request
(utime + stime from /proc/PID/stat over the load run, divided by its requests): the module's
hooks run in the context of whatever task hits them, and those on the server's threads (its
receives, its state changes, its context switches) are charged to it there. Printed per mode:
the medians of both sides, and the median and quartiles of the pairs' ratios on/off.

Usage (as root, from the repository): python3 bench/kernel_cost.py [--rounds 8] [--seconds 5]
It builds `webscope` in release first unless --binary is given.
"""

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    """utime + stime of every thread of `pid`, seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def quartiles(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return xs[0], xs[-1]
    q = statistics.quantiles(xs, n=4)
    return q[0], q[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--binary", default=None)
    args = ap.parse_args()
    binary = args.binary
    if binary is None:
        # The module is compiled only with the `kernel` feature: without it --kernel is refused.
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "webscope", "--features", "webscope/kernel"],
                       check=True)
        binary = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "webscope")
    root = tempfile.mkdtemp(prefix="kernel-cost-")
    with open(os.path.join(root, "1k"), "wb") as f:
        f.write(os.urandom(1024))
    port = free_port()
    server = subprocess.Popen(
        ["taskset", "-c", "0", binary, "serve", "--root", root, "--listen", f"127.0.0.1:{port}", "--workers", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    url = f"http://127.0.0.1:{port}/1k"
    results = {}
    # What the figures are of: the day, the kernel, the CPUs, and how busy the machine was
    # (it is shared; the pairs' alternation cancels a drift, not the noise).
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, kernel {os.uname().release}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    try:
        for mode in ["keep-alive", "close"]:
            pairs = []
            for r in range(args.rounds):
                order = ["off", "on"] if r % 2 == 0 else ["on", "off"]
                got = {}
                for side in order:
                    cmd = ["taskset", "-c", "1", binary, "monitor", "--port", str(port), "--pid", str(server.pid),
                           "--interval", "100ms", "-q"]
                    if side == "on":
                        cmd.append("--kernel")
                    monitor = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    time.sleep(1.0)
                    if monitor.poll() is not None:
                        sys.exit(f"the monitor ended: {monitor.stderr.read()}")
                    out = os.path.join(root, "load.json")
                    before = cpu_seconds(server.pid)
                    load = ["taskset", "-c", "1", binary, "load", "-c", str(args.connections), "-t", "1",
                            "-d", f"{args.seconds}s", "--json", out, url]
                    if mode == "close":
                        load.insert(-1, "--close")
                    subprocess.run(load, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    after = cpu_seconds(server.pid)
                    monitor.send_signal(signal.SIGINT)
                    text, err = monitor.communicate(timeout=30)
                    if side == "on" and "no kernel figures" in text + err:
                        sys.exit(f"the kernel module did not load: {text}{err}")
                    with open(out) as f:
                        requests = json.load(f)["requests"]
                    got[side] = (after - before) * 1e6 / max(requests, 1)
                    print(f"{mode:10} round {r + 1} {side:3}: {requests / args.seconds:8.0f} req/s, "
                          f"{got[side]:6.2f} us server CPU per request", flush=True)
                pairs.append((got["off"], got["on"]))
            results[mode] = pairs
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    for mode, pairs in results.items():
        off = [p[0] for p in pairs]
        on = [p[1] for p in pairs]
        ratios = [b / a for a, b in pairs]
        q1, q3 = quartiles(ratios)
        print(f"{mode:10}: server CPU per request off {statistics.median(off):.2f} us, "
              f"on {statistics.median(on):.2f} us; on/off median {statistics.median(ratios):.3f} "
              f"(quartiles {q1:.3f}-{q3:.3f}) over {len(pairs)} pairs")


if __name__ == "__main__":
    main()
