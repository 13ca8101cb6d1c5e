#!/usr/bin/env python3
"""What the monitor's kernel module (`webscope monitor --kernel`, #49) costs the server.

The embedded server (one worker, pinned to CPU 0) is loaded by `webscope load` (pinned to CPU 1)
at 1 KiB, keep-alive and Connection: close, while `webscope monitor --port P --pid S` runs beside
it with --kernel and without, in pairs whose order alternates (off-on, on-off, ...), so that the
machine's drift falls on both sides alike. The figure is the server's CPU time per request
(the scheduler's own count of each thread's time on a CPU, ns, from /proc/PID/task/*/schedstat,
over the load run, divided by its requests; utime + stime are sampled at the tick): the
module's hooks run in the context of whatever task hits them, and those on the server's
threads (its receives, its state changes, its context switches) are charged to it there.
Printed per mode: the medians of both sides, the median and quartiles of the pairs' ratios
on/off, and the mean of the pairs' differences with its standard error. Hardware counters
(perf stat -e cycles,instructions), which would see through the shared host's noise, are not
there in a KVM guest without a virtual PMU (perf says `<not supported>`): the pairs and their
number are what this has.

With --bpf-stats it measures instead what the pairs cannot show on a shared machine: the
programs' own run time, from the kernel's BPF statistics (kernel.bpf_stats_enabled=1, switched
back off at the end; `bpftool prog show` gives each program's run_time_ns and run_cnt). The
monitor runs with --kernel throughout; per mode, the growth of each of its programs' counts
over a load run, per request: runs, ns per run, ns per request, and their sum against the
server's CPU per request. The sum is an upper bound of the server's share: it holds every run
on the machine (the client's sockets' events, filtered out at once, included) and the
statistics' own clock reads.

With --perf it measures the server's own share directly, without differencing two noisy
runs: a sampling profile of the server's threads (perf record -e cpu-clock -p SERVER, a
software clock: this guest has no hardware counters) with the monitor and its --kernel on,
and the samples whose function is the module's (its JIT-compiled programs, bpf_prog_*; the
tracepoints' BPF glue, __bpf_trace_* and bpf_trace_run*; the helpers they call) over all the
server's samples, per mode and round. That is the share of the server's CPU time the
hooks took in its context, the figure #49's 2 % is of; what it leaves out is what they cost
it indirectly (cache lines taken, a slower client feeding it at a lower rate). The profile's
clock ticks in interrupts, which are held off while interrupts are: code running with them
off is seen at its end, and so counted with what follows.

With --rate the pairs run open loop at a fixed rate per mode, so that the module cannot move
the server's CPU per request through the rate a slower client would feed it at.

With two --monitor-binary the pairs compare two builds of the program, each with --kernel,
side by side (a change to a hook, before and after).

Usage (as root, from the repository): python3 bench/kernel_cost.py [--rounds 8] [--seconds 5] [--rate keep-alive=40000,close=12000]
       python3 bench/kernel_cost.py --rate close=10000 --modes close --monitor-binary OLD/webscope,NEW/webscope
       python3 bench/kernel_cost.py --bpf-stats [--rounds 3] [--seconds 5]
       python3 bench/kernel_cost.py --perf [--rounds 3] [--seconds 5]
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
    """The time every thread of `pid` has spent on a CPU, seconds: the scheduler's
    sum_exec_runtime (ns), not utime + stime, which the tick samples (10 ms a tick here)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return total / 1e9


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
    ap.add_argument("--rate", default=None,
                    help="open loop at a fixed rate per mode, e.g. 'keep-alive=40000,close=12000' (default: closed "
                         "loop): the same requests a second on and off, so a module that slows the client cannot "
                         "move the server's CPU per request through its rate")
    ap.add_argument("--modes", default="keep-alive,close", help="comma-separated: keep-alive, close")
    ap.add_argument("--binary", default=None)
    ap.add_argument("--monitor-binary", default=None,
                    help="the webscope that runs the monitor (default: --binary), e.g. a debug build of a changed program; "
                         "with --bpf-stats several, comma-separated, compared round by round; in pairs two, each with "
                         "--kernel, against each other (two builds of the program side by side)")
    ap.add_argument("--bpf-stats", action="store_true",
                    help="the programs' own run time per request (kernel.bpf_stats_enabled) instead of pairs")
    ap.add_argument("--perf", action="store_true",
                    help="the hooks' share of the server's own CPU samples (perf record -e cpu-clock) instead of pairs")
    args = ap.parse_args()
    try:
        rates = dict((m, float(r)) for m, r in (kv.split("=") for kv in args.rate.split(","))) if args.rate else {}
    except ValueError:
        sys.exit(f"--rate {args.rate!r}: give MODE=REQUESTS_PER_S pairs, e.g. 'keep-alive=40000,close=12000'")
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
        if args.perf:
            return perf_share(args, binary, port, server, url, root)
        results = pairs(args, binary, port, server, url, root, rates)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    a, b = results.pop("sides")
    for mode, got in results.items():
        first = [p[0] for p in got]
        second = [p[1] for p in got]
        ratios = [y / x for x, y in got]
        q1, q3 = quartiles(ratios)
        diffs = [y - x for x, y in got]
        se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
        print(f"{mode:10}: server CPU per request {a} {statistics.median(first):.2f} us, "
              f"{b} {statistics.median(second):.2f} us; {b}/{a} median {statistics.median(ratios):.3f} "
              f"(quartiles {q1:.3f}-{q3:.3f}) over {len(got)} pairs; {b} - {a} mean "
              f"{statistics.mean(diffs):+.3f} us (standard error {se:.3f}), "
              f"{100 * statistics.mean(diffs) / statistics.median(first):+.2f} % of {a}'s median")


def pairs(args, binary, port, server, url, root, rates):
    """Per mode, pairs of load runs whose order alternates: the monitor without --kernel and
    with it ("off", "on"); or, given two --monitor-binary, each build's monitor with --kernel
    (named by their paths' last two parts), so that two programs are compared side by side.
    Returns {mode: [(first side's us per request, second's)], "sides": (first, second)}."""
    monitors = (args.monitor_binary or binary).split(",")
    if len(monitors) == 2:
        sides = [("/".join(m.rstrip("/").split("/")[-2:]), m, True) for m in monitors]
        if sides[0][0] == sides[1][0]:
            sys.exit("--monitor-binary: two builds at two different paths")
    elif len(monitors) == 1:
        sides = [("off", monitors[0], False), ("on", monitors[0], True)]
    else:
        sys.exit("--monitor-binary: one build (off against on), or two (each on, against each other)")
    results = {"sides": (sides[0][0], sides[1][0])}
    for mode in args.modes.split(","):
        got = []
        for r in range(args.rounds):
            per = {}
            for name, monitor_binary, kernel in (sides if r % 2 == 0 else sides[::-1]):
                cmd = ["taskset", "-c", "1", monitor_binary, "monitor", "--port", str(port), "--pid", str(server.pid),
                       "--interval", "100ms", "-q"] + (["--kernel"] if kernel else [])
                monitor = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                time.sleep(1.0)
                if monitor.poll() is not None:
                    sys.exit(f"the monitor ended: {monitor.stderr.read()}")
                before = cpu_seconds(server.pid)
                requests = load_run(args, binary, url, root, mode, rates.get(mode))
                after = cpu_seconds(server.pid)
                monitor.send_signal(signal.SIGINT)
                text, err = monitor.communicate(timeout=30)
                if kernel and "no kernel figures" in text + err:
                    sys.exit(f"the kernel module did not load: {text}{err}")
                per[name] = (after - before) * 1e6 / max(requests, 1)
                print(f"{mode:10} round {r + 1} {name}: {requests / args.seconds:8.0f} req/s, "
                      f"{per[name]:6.2f} us server CPU per request", flush=True)
            got.append((per[sides[0][0]], per[sides[1][0]]))
        results[mode] = got
    return results


def load_run(args, binary, url, root, mode, rate=None):
    """One load run (open loop at `rate` requests a second if given): its requests."""
    out = os.path.join(root, "load.json")
    load = ["taskset", "-c", "1", binary, "load", "-c", str(args.connections), "-t", "1",
            "-d", f"{args.seconds}s", "--json", out, url]
    if mode == "close":
        load.insert(-1, "--close")
    if rate:
        load[-1:-1] = ["--rate", str(rate)]
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


def module_symbol(sym):
    """Whether a sampled function is the kernel module's: its programs (bpf_prog_<tag>_<name>),
    the tracepoints' BPF glue (__bpf_trace_<tracepoint>, bpf_trace_run<N>), or a helper its
    programs call. Not the kernel's own BPF LSM and socket hooks (bpf_lsm_*, bpf_skops_*,
    bpf_*_storage_free), which run with or without it."""
    return sym.startswith(("bpf_prog_", "bpf_trace_run", "__bpf_trace_", "bpf_ktime_get",
                           "bpf_ringbuf_", "bpf_probe_read", "bpf_get_current_task"))


def perf_share(args, binary, port, server, url, root):
    """Per mode and round: the share of the server's cpu-clock samples in the module's code,
    with the monitor's --kernel on (the same profile with it off is taken too, as a check
    that these functions are not sampled without it)."""
    data = os.path.join(root, "perf.data")
    shares = {}
    by_sym = {}
    for r in range(args.rounds):
        for side in (["on", "off"] if r % 2 == 0 else ["off", "on"]):
            cmd = ["taskset", "-c", "1", args.monitor_binary or binary, "monitor", "--port", str(port), "--pid",
                   str(server.pid), "--interval", "100ms", "-q"] + (["--kernel"] if side == "on" else [])
            monitor = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                time.sleep(1.5)
                if monitor.poll() is not None:
                    sys.exit(f"the monitor ended: {monitor.stderr.read()}")
                for mode in args.modes.split(","):
                    perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-p", str(server.pid),
                                             "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    time.sleep(0.3)
                    requests = load_run(args, binary, url, root, mode)
                    perf.send_signal(signal.SIGINT)
                    perf.wait(timeout=60)
                    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], capture_output=True, text=True).stdout
                    # "ffffffff816b1c95 filp_flush": the function after the address.
                    syms = [(line.split(None, 1) + [""])[1].strip() for line in out.splitlines() if line.strip()]
                    ours = sum(1 for sym in syms if module_symbol(sym))
                    share = 100 * ours / max(len(syms), 1)
                    print(f"{mode:10} round {r + 1} {side:3}: {requests / args.seconds:8.0f} req/s, {len(syms)} samples of the server, "
                          f"{ours} in the module's code: {share:.2f} %", flush=True)
                    shares.setdefault((mode, side), []).append((ours, len(syms)))
                    for sym in syms:
                        if module_symbol(sym):
                            by_sym.setdefault((mode, side), {}).setdefault(sym, 0)
                            by_sym[(mode, side)][sym] += 1
            finally:
                monitor.send_signal(signal.SIGINT)
                try:
                    monitor.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    monitor.kill()
    print()
    for (mode, side), got in sorted(shares.items()):
        ours = sum(o for o, _ in got)
        total = sum(t for _, t in got)
        p = ours / max(total, 1)
        # A binomial proportion's standard error: the samples are the clock's ticks.
        se = (p * (1 - p) / max(total, 1)) ** 0.5
        per_round = ", ".join(f"{100 * o / max(t, 1):.2f}" for o, t in got)
        print(f"{mode:10} {side:3}: {100 * p:.2f} % of the server's {total} samples in the module's code "
              f"(standard error {100 * se:.2f}; rounds {per_round})")
        top = sorted(by_sym.get((mode, side), {}).items(), key=lambda kv: -kv[1])[:8]
        print("    " + ", ".join(f"{sym} {100 * n / max(total, 1):.2f} %" for sym, n in top))


if __name__ == "__main__":
    main()
