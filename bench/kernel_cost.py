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

With --bpf-stats it measures instead what the pairs cannot show on a shared machine: the
programs' own run time, from the kernel's BPF statistics (kernel.bpf_stats_enabled=1, switched
back off at the end; `bpftool prog show` gives each program's run_time_ns and run_cnt). The
monitor runs with --kernel throughout; per mode, the growth of each of its programs' counts
over a load run, per request: runs, ns per run, ns per request, and their sum against the
server's CPU per request. The sum is an upper bound of the server's share: it holds every run
on the machine (the client's sockets' events, filtered out at once, included) and the
statistics' own clock reads.

Usage (as root, from the repository): python3 bench/kernel_cost.py [--rounds 8] [--seconds 5]
       python3 bench/kernel_cost.py --bpf-stats [--rounds 3] [--seconds 5]
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


# The monitor's programs (webscope.bpf.c), by the names bpftool shows (15 characters at most).
PROGRAMS = ["on_state", "on_sys_exit", "on_recv", "on_drop", "on_retransmit", "on_ca_state",
            "on_synack", "on_wakeup", "on_wakeup_new", "on_switch", "on_timer_fire"]


def bpf_programs():
    """{id: (name, run_time_ns, run_cnt)} of every loaded program with one of PROGRAMS' names."""
    out = subprocess.run(["bpftool", "prog", "show", "-j"], check=True, capture_output=True, text=True).stdout
    progs = {}
    for p in json.loads(out or "[]"):
        if p.get("name") in PROGRAMS:
            progs[p["id"]] = (p["name"], p.get("run_time_ns", 0), p.get("run_cnt", 0))
    return progs


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
    ap.add_argument("--monitor-binary", default=None,
                    help="the webscope that runs the monitor (default: --binary), e.g. a debug build of a changed program; "
                         "with --bpf-stats several, comma-separated, compared round by round")
    ap.add_argument("--bpf-stats", action="store_true",
                    help="the programs' own run time per request (kernel.bpf_stats_enabled) instead of pairs")
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
        if args.bpf_stats:
            return bpf_stats(args, binary, port, server, url, root)
        for mode in ["keep-alive", "close"]:
            pairs = []
            for r in range(args.rounds):
                order = ["off", "on"] if r % 2 == 0 else ["on", "off"]
                got = {}
                for side in order:
                    cmd = ["taskset", "-c", "1", args.monitor_binary or binary, "monitor", "--port", str(port), "--pid", str(server.pid),
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


def load_run(args, binary, url, root, mode):
    """One load run: its requests."""
    out = os.path.join(root, "load.json")
    load = ["taskset", "-c", "1", binary, "load", "-c", str(args.connections), "-t", "1",
            "-d", f"{args.seconds}s", "--json", out, url]
    if mode == "close":
        load.insert(-1, "--close")
    subprocess.run(load, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)["requests"]


def bpf_stats(args, binary, port, server, url, root):
    """The monitor's programs' run time per request, with the kernel's BPF statistics on; with
    several --monitor-binary (comma-separated: builds of different programs), each round runs
    each of them in turn, in an order that alternates, so that the machine's drift falls on
    all alike."""
    stats = "/proc/sys/kernel/bpf_stats_enabled"
    with open(stats) as f:
        was = f.read().strip()
    monitors = (args.monitor_binary or binary).split(",")
    per = {m: {} for m in monitors}
    try:
        with open(stats, "w") as f:
            f.write("1")
        for r in range(args.rounds):
            for m in (monitors if r % 2 == 0 else monitors[::-1]):
                one_monitor(args, m, binary, port, server, url, root, r, per[m])
    finally:
        with open(stats, "w") as f:
            f.write(was)
    for m in monitors:
        if len(monitors) > 1:
            print(f"\n{m}:")
        else:
            print()
        for mode, runs in per[m].items():
            cpu = statistics.median(c for c, _, _ in runs)
            total = statistics.median(t for _, t, _ in runs)
            print(f"{mode:10}: server CPU {cpu / 1e3:.2f} us/request (median of {len(runs)}); programs "
                  f"{total:.0f} ns/request, {100 * total / cpu:.1f} % of it")
            for name in PROGRAMS:
                got = [row[name] for _, _, row in runs if name in row]
                if not got:
                    continue
                per_req = statistics.median(g[0] for g in got)
                ns = sum(g[1] for g in got)
                cnt = sum(g[2] for g in got)
                per_run = ns / cnt if cnt else 0
                print(f"    {name:14} {per_req:6.2f} runs/request x {per_run:6.0f} ns = {per_req * per_run:6.0f} ns/request")


def one_monitor(args, monitor_binary, binary, port, server, url, root, r, per_mode):
    """One round of one monitor build: keep-alive and close, its programs' figures added to
    per_mode[mode]."""
    before_monitor = set(bpf_programs())
    monitor = subprocess.Popen(
        ["taskset", "-c", "1", monitor_binary, "monitor", "--port", str(port), "--pid", str(server.pid),
         "--interval", "100ms", "-q", "--kernel"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        if monitor.poll() is not None:
            sys.exit(f"the monitor ended: {monitor.stderr.read()}")
        # This monitor's programs: those that appeared with it (another monitor's, loaded
        # before, are left out; one loaded meanwhile would be counted, so run this alone).
        ours = set(bpf_programs()) - before_monitor
        if not ours:
            sys.exit("no program of the kernel module appeared: it did not load")
        for mode in ["keep-alive", "close"]:
            a = bpf_programs()
            cpu_a = cpu_seconds(server.pid)
            requests = max(load_run(args, binary, url, root, mode), 1)
            cpu = (cpu_seconds(server.pid) - cpu_a) * 1e9 / requests
            b = bpf_programs()
            rows = {}
            for pid in ours:
                if pid in a and pid in b:
                    rows[a[pid][0]] = ((b[pid][2] - a[pid][2]) / requests, b[pid][1] - a[pid][1],
                                       b[pid][2] - a[pid][2])
            total = sum(ns for _, ns, _ in rows.values()) / requests
            print(f"{mode:10} round {r + 1} {os.path.basename(monitor_binary)}: {requests / args.seconds:8.0f} req/s, "
                  f"server CPU {cpu / 1e3:.2f} us/request, programs {total:.0f} ns/request "
                  f"({100 * total / cpu:.1f} %)", flush=True)
            per_mode.setdefault(mode, []).append((cpu, total, rows))
    finally:
        monitor.send_signal(signal.SIGINT)
        try:
            monitor.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            monitor.kill()


if __name__ == "__main__":
    main()
