#!/usr/bin/env python3
"""How far the capacity search (`webscope lab --experiment capacity`) moves between searches of
one server, on a quiet machine and on a disturbed one (#33's "Done when").

Four configurations: nginx (one worker, pinned to CPU 0 by taskset) and the embedded server (the
lab pins it to CPU 0 itself), each keep-alive and with a connection per request; the lab's
generator runs on CPU 1. Both serve one 1 KiB file (`webscope fileset single --size 1k`), and
the search's objective is --slo (default p99<=5ms,errors<=0.1%) on --duration probes (default
3s). Searches alternate between configurations (A B C D A B C D ...) so that a drift of the
machine spreads over all of them.

Quiet: N searches per configuration; the median capacity and the spread (max - min) / median,
goal <= 10 % (#48: the capacity is the range rule's lower edge L; #33's goal for the settled
rule's single figure was 5 %). Disturbed: N more while CPU hogs come and go on CPU 0 and CPU 1 (each on for a
random 1-4 s, off for 1-4 s) and an I/O hog writes with O_DIRECT in a loop; each search must
land within 10 % of its configuration's quiet median or refuse (anything that is not a capacity:
"no capacity ...", a bound, a search cut short). A capacity further off is a violation.

The quiet table also says what `webscope compare --threshold 'capacity>-5%'` made of every ordered
pair of one configuration's quiet searches (the same server twice: a pass is right, CROSSED a
false alarm, "cannot be decided" a shrug). Each capacity found is shown with its search's machine
reference (`machine_reference`: the mean of the lab's reference loop before every probe, in
ms; higher is a slower machine), which `compare` sets side by side, and how far the server's own
peak moved within the search (report.json `peak`: the goodput of its probes that were behind their
rate from start to end, (max - min) / median).

Prints two Markdown tables (quiet, disturbed; a search the generator bound shows the rate it
passed, "above N (generator-bound)") and each search's sentence; progress goes to stderr.
Ctrl-C stops the search under way and prints what was measured; nginx, the hogs and the lab are
stopped on any exit. Needs nginx (nginx-light, installed as root if missing), taskset, dd and
cargo (unless --webscope); traffic stays on 127.0.0.1. A full run (40 searches of 6-40 probes of
--duration, a fifth more of warm-up, and the TIME_WAIT wait in close mode) takes about an hour.
"""
import argparse
import json
import math
import os
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_vs_nginx import free_port, wait_port, webscope_binary  # noqa: E402

# name → (server, keep-alive, label)
CONFIGS = {
    "nginx-ka": ("nginx", True, "nginx, keep-alive"),
    "nginx-close": ("nginx", False, "nginx, close"),
    "serve-ka": ("serve", True, "embedded, keep-alive"),
    "serve-close": ("serve", False, "embedded, close"),
}
QUIET_SPREAD_GOAL = 0.10
DISTURBED_TOLERANCE = 0.10
# Every process this script started, so that any exit stops them (each leads its own group).
LIVE = set()
LIVE_LOCK = threading.Lock()


def spawn(cmd, **kw):
    """Starts `cmd` in a session of its own (Ctrl-C reaches only this script, which stops it)."""
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.DEVNULL)
    proc = subprocess.Popen(cmd, start_new_session=True, **kw)
    with LIVE_LOCK:
        LIVE.add(proc)
    return proc


def kill_group(proc, sig=signal.SIGKILL, wait=5.0):
    """Signals proc's process group and waits for proc; SIGKILL when `sig` was not enough."""
    for s in (sig, signal.SIGKILL):
        try:
            os.killpg(proc.pid, s)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with LIVE_LOCK:
        LIVE.discard(proc)


def descendants(pid):
    """PIDs below `pid` (the lab's embedded server leads a process group of its own)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def stop_all():
    with LIVE_LOCK:
        procs = list(LIVE)
    for proc in procs:
        kill_group(proc, wait=2.0)


def raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def ensure_nginx():
    if shutil.which("nginx") or os.path.exists("/usr/sbin/nginx"):
        return
    print("installing nginx-light ...", file=sys.stderr)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], check=True, stdout=subprocess.DEVNULL)


class Nginx:
    """nginx with one worker (no master) on CPU 0, serving `root`; its log to /dev/null, as the
    embedded server's in the lab."""

    def __init__(self, root, work):
        self.port = free_port()
        conf = os.path.join(work, "nginx.conf")
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
    access_log /dev/null combined buffer=64k flush=1s;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    open_file_cache max=1000 inactive=20s;
    server {{
        listen 127.0.0.1:{self.port} reuseport deferred;
        root {root};
    }}
}}
""")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = spawn(["taskset", "-c", "0", nginx, "-c", conf, "-p", work])
        try:
            wait_port(self.port)
        except RuntimeError:
            self.stop()
            raise RuntimeError(f"nginx did not start: see {work}/nginx-error.log")

    def stop(self):
        kill_group(self.proc, signal.SIGQUIT, wait=10.0)


def direct_io_flag(work):
    """dd's flag for writes that reach the disk: O_DIRECT where the file system has it."""
    probe = os.path.join(work, "direct-probe")
    ok = subprocess.run(["dd", "if=/dev/zero", f"of={probe}", "bs=1M", "count=1", "oflag=direct", "status=none"],
                        stderr=subprocess.DEVNULL).returncode == 0
    if os.path.exists(probe):
        os.remove(probe)
    return "oflag=direct" if ok else "conv=fdatasync"


class Disturber:
    """CPU hogs that come and go on each CPU (on 1-4 s, off 1-4 s, at random) and an I/O hog
    writing 256 MiB at a time, from start() to stop()."""

    def __init__(self, work, cpus=(0, 1)):
        self.file = os.path.join(work, "io-hog")
        self.flag = direct_io_flag(work)
        self.cpus = cpus
        self.rng = random.Random()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads, self.hogs, self.io = [], set(), None
        self.on_s, self.started = {}, None

    def start(self):
        self.stopping.clear()
        self.on_s = {cpu: 0.0 for cpu in self.cpus}
        loop = (f"while :; do dd if=/dev/zero of={shlex.quote(self.file)} bs=1M count=256 {self.flag} "
                f"status=none || sleep 1; rm -f {shlex.quote(self.file)}; done")
        self.io = spawn(["sh", "-c", loop])
        self.started = time.time()
        self.threads = [threading.Thread(target=self._cycle, args=(cpu,), daemon=True) for cpu in self.cpus]
        for t in self.threads:
            t.start()

    def _cycle(self, cpu):
        while not self.stopping.wait(self.rng.uniform(1, 4)):
            with self.lock:
                if self.stopping.is_set():
                    return
                hog = spawn(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"])
                self.hogs.add(hog)
            began = time.time()
            self.stopping.wait(self.rng.uniform(1, 4))
            with self.lock:
                self.hogs.discard(hog)
            kill_group(hog)
            self.on_s[cpu] += time.time() - began

    def stop(self):
        """Stops every hog; returns the share of the time each CPU hog was on."""
        with self.lock:
            self.stopping.set()
            hogs = list(self.hogs)
        for hog in hogs:
            kill_group(hog)
        for t in self.threads:
            t.join()
        if self.io:
            kill_group(self.io)
            self.io = None
        if os.path.exists(self.file):
            os.remove(self.file)
        if self.started is None:
            return {}
        elapsed = max(time.time() - self.started, 1e-9)
        self.started = None
        return {cpu: on / elapsed for cpu, on in self.on_s.items()}


def fmt_rps(x):
    return f"{x:,.0f}".replace(",", " ")


def last_line(path):
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return "no output"
    return lines[-1] if lines else "no output"


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def read_outcome(out, code, log):
    """The search's result from OUT/report.json: a capacity (with its bracket), or a refusal
    with the lab's sentence; anything not a positive capacity is a refusal, whatever new endings
    the search gains. No report at all is an error (the lab's last line says why)."""
    try:
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
    except (OSError, ValueError):
        return {"kind": "error", "sentence": f"no report.json (exit {code}): {last_line(log)}"}
    cap = report.get("capacity") if isinstance(report, dict) else None
    if not isinstance(cap, dict):
        return {"kind": "error", "sentence": f"report.json has no capacity entry (exit {code}): {last_line(log)}"}
    ending = cap.get("ending") if isinstance(cap.get("ending"), dict) else {}
    probes = cap.get("probes") if isinstance(cap.get("probes"), list) else []
    result = {
        "sentence": str(cap.get("sentence") or ending.get("kind") or "no sentence"),
        "ending": ending.get("kind"),
        "probes": len(probes),
        "probe_s": cap.get("probe_s") if number(cap.get("probe_s")) else None,
        "cooldown_s": sum(p["cooldown"]["waited_s"] for p in probes
                          if isinstance(p.get("cooldown"), dict) and number(p["cooldown"].get("waited_s"))),
    }
    machine = cap.get("machine_reference") if isinstance(cap.get("machine_reference"), dict) else {}
    result["machine_ms"] = machine.get("mean_ms") if number(machine.get("mean_ms")) else None
    peak = cap.get("peak") if isinstance(cap.get("peak"), dict) else {}
    result["peak_spread"] = peak.get("spread") if number(peak.get("spread")) else None
    rps = cap.get("capacity_rps")
    if number(rps) and rps > 0:
        result.update(kind="capacity", capacity_rps=float(rps),
                      fails_at_rps=ending.get("fails_at_rps") if number(ending.get("fails_at_rps")) else None,
                      bracket_pct=ending.get("bracket_pct") if number(ending.get("bracket_pct")) else None)
    else:
        result["kind"] = "refused"
        if number(ending.get("above_rps")):
            result["above_rps"] = float(ending["above_rps"])
    return result


def probes_done(out):
    count = 0
    for _, _, files in os.walk(out):
        count += "probe.json" in files
    return count


def run_lab(cmd, out, log_path, label, args):
    """Runs one search; returns its exit code. Ctrl-C (or the timeout) interrupts the lab as a
    terminal would (SIGINT: it writes what it measured) and then makes sure it and its server
    are gone."""
    with open(log_path, "w") as log:
        lab = spawn(cmd, stdout=log, stderr=subprocess.STDOUT)
    started = time.time()
    next_note = started + 60
    try:
        while lab.poll() is None:
            time.sleep(0.5)
            now = time.time()
            if now - started > args.search_timeout:
                print(f"  {label}: no end after {args.search_timeout:.0f} s, stopped", file=sys.stderr)
                stop_lab(lab)
                break
            if now >= next_note:
                print(f"  {label}: {probes_done(out)} probes, {now - started:.0f} s", file=sys.stderr)
                next_note = now + 60
    except KeyboardInterrupt:
        stop_lab(lab)
        raise
    with LIVE_LOCK:
        LIVE.discard(lab)
    return lab.returncode


def stop_lab(lab):
    below = descendants(lab.pid)
    kill_group(lab, signal.SIGINT, wait=30.0)
    for pid in below:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def search(config, phase, index, ctx, args):
    """One capacity search of `config`; the record of its outcome."""
    server, keep_alive, label = CONFIGS[config]
    out = os.path.join(ctx["work"], f"{phase}-{config}-{index}")
    cmd = [ctx["binary"], "lab", "--experiment", "capacity", "--slo", args.slo, "--duration", args.duration,
           "--fileset", ctx["fileset"], "--work", os.path.join(ctx["work"], "cache"), "--out", out, "--quiet",
           *shlex.split(args.lab_args)]
    if keep_alive:
        cmd.append("--keep-alive")
    nginx = disturbed = None
    started = time.time()
    try:
        if server == "nginx":
            nginx = Nginx(ctx["fileset"], ctx["work"])
            cmd += ["--target", f"http://127.0.0.1:{nginx.port}/"]
        if phase == "disturbed":
            ctx["disturber"].start()
            disturbed = True
        code = run_lab(cmd, out, out + ".log", f"{phase} {config} #{index + 1}", args)
    finally:
        hog_share = ctx["disturber"].stop() if disturbed else None
        if nginx:
            nginx.stop()
    record = {"config": config, "label": label, "phase": phase, "search": index + 1, "exit": code,
              "elapsed_s": round(time.time() - started, 1), **read_outcome(out, code, out + ".log")}
    if hog_share:
        record["cpu_hog_on_share"] = {f"cpu{c}": round(s, 2) for c, s in hog_share.items()}
    # Kept until the A/A comparisons have read it (the work directory goes at the end).
    record["out"] = out
    return record


def aa_compares(records, ctx, configs):
    """What `webscope compare --threshold 'capacity>-5%'` says of every ordered pair of one
    configuration's quiet searches that found a capacity: the same server twice, so anything
    but a pass is a false alarm (1: CROSSED) or a shrug (3: cannot be decided)."""
    result = {}
    for config in configs:
        outs = [r["out"] for r in records
                if r["phase"] == "quiet" and r["config"] == config and r["kind"] == "capacity"]
        counts = {"pass": 0, "crossed": 0, "undecided": 0, "error": 0}
        for a in outs:
            for b in outs:
                if a == b:
                    continue
                code = subprocess.run([ctx["binary"], "compare", a, b, "--threshold", "capacity>-5%"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
                counts[{0: "pass", 1: "crossed", 3: "undecided"}.get(code, "error")] += 1
        if len(outs) > 1:
            result[config] = counts
    return result


def figure(r):
    if r["kind"] == "capacity":
        bracket = f" ±{r['bracket_pct']:.1f} %" if r.get("bracket_pct") is not None else ""
        said = [f"machine {r['machine_ms']:.1f} ms"] if r.get("machine_ms") is not None else []
        said += [f"peak moved {100 * r['peak_spread']:.0f} %"] if r.get("peak_spread") is not None else []
        return f"{fmt_rps(r['capacity_rps'])}{bracket}" + (f" ({', '.join(said)})" if said else "")
    # A search the generator bound found no capacity, but a floor under it: say which.
    if r.get("ending") == "generator" and r.get("above_rps") is not None:
        return f"above {fmt_rps(r['above_rps'])} (generator-bound)"
    return f"{r['kind']} ({r['ending']})" if r.get("ending") else r["kind"]


def quiet_stats(records):
    caps = [r["capacity_rps"] for r in records if r["kind"] == "capacity"]
    if not caps:
        return None, None
    median = statistics.median(caps)
    return median, (max(caps) - min(caps)) / median


def judge(r, median):
    """A disturbed search's verdict against its quiet median."""
    if r["kind"] != "capacity":
        return r["kind"]
    if median is None:
        return "no quiet median"
    off = r["capacity_rps"] / median - 1
    return "within" if abs(off) <= DISTURBED_TOLERANCE else "violation"


def by_config(records, phase, configs):
    return {c: [r for r in records if r["phase"] == phase and r["config"] == c] for c in configs}


def details(rows):
    for r in rows:
        print(f"- {r['label']} #{r['search']} (exit {r['exit']}, {r['elapsed_s']:.0f} s, {r.get('probes', 0)} probes): "
              f"{r['sentence']}")


def quiet_table(records, configs, aa):
    groups = by_config(records, "quiet", configs)
    print("\n**Quiet** (median and spread = (max - min) / median of the capacities found; "
          f"goal <= {QUIET_SPREAD_GOAL * 100:.0f} %)\n")
    print(f"| configuration | searches | capacities, req/s (bracket) | median req/s | spread | <= {QUIET_SPREAD_GOAL * 100:.0f} % "
          "| A/A compare 'capacity>-5%': pass, CROSSED, cannot decide |")
    print("|---|---|---|---|---|---|---|")
    medians = {}
    for config, rows in groups.items():
        if not rows:
            continue
        median, spread = quiet_stats(rows)
        medians[config] = median
        found = sum(r["kind"] == "capacity" for r in rows)
        cells = ", ".join(figure(r) for r in rows)
        # One capacity found has no spread to judge: the goal is about searches agreeing.
        if spread is None or found < 2:
            goal = "- (fewer than 2 found)" if spread is not None else "-"
        else:
            goal = "yes" if spread <= QUIET_SPREAD_GOAL else "**no**"
        print(f"| {CONFIGS[config][2]} | {found} of {len(rows)} found | {cells} | "
              f"{'-' if median is None else fmt_rps(median)} | "
              f"{'-' if spread is None else f'{spread * 100:.1f} %'} | {goal} | {pairs(aa.get(config))} |")
    print()
    details([r for rows in groups.values() for r in rows])
    return medians


def pairs(counts):
    if not counts:
        return "-"
    text = f"{counts['pass']}, {counts['crossed']}, {counts['undecided']}"
    return text + (f" ({counts['error']} errors)" if counts["error"] else "")


def disturbed_table(records, configs, medians):
    groups = by_config(records, "disturbed", configs)
    if not any(groups.values()):
        return 0
    print("\n**Disturbed** (CPU hogs coming and going on CPUs 0 and 1, an I/O hog; each search within "
          "10 % of the quiet median, or refused)\n")
    print("| configuration | quiet median | each search (vs the quiet median) | within 10 % | refused | error "
          "| further off |")
    print("|---|---|---|---|---|---|---|")
    violations = total = 0
    for config, rows in groups.items():
        if not rows:
            continue
        median = medians.get(config)
        verdicts = [judge(r, median) for r in rows]
        cells = []
        for r, v in zip(rows, verdicts):
            if r["kind"] == "capacity" and median:
                mark = " ✗" if v == "violation" else ""
                cells.append(f"{fmt_rps(r['capacity_rps'])} ({(r['capacity_rps'] / median - 1) * 100:+.1f} %){mark}")
            else:
                cells.append(figure(r))
        off = verdicts.count("violation")
        violations += off
        total += len(rows)
        print(f"| {CONFIGS[config][2]} | {'-' if median is None else fmt_rps(median)} | {', '.join(cells)} | "
              f"{verdicts.count('within')} | {verdicts.count('refused')} | {verdicts.count('error')} | "
              f"{f'**{off}**' if off else 0} |")
    print(f"\nViolations (a capacity further than 10 % from the quiet median): {violations} of {total} searches.\n")
    details([r for rows in groups.values() for r in rows])
    return violations


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--searches", type=int, default=None,
                   help="searches per configuration and phase (default 5; 2 with --quick)")
    p.add_argument("--configs", default=",".join(CONFIGS),
                   help=f"comma-separated subset of {', '.join(CONFIGS)} (default: all)")
    p.add_argument("--duration", default=None,
                   help="each probe's length, as lab --duration (default 3s; 1s with --quick)")
    p.add_argument("--slo", default="p99<=5ms,errors<=0.1%", help="the objective (default p99<=5ms,errors<=0.1%%)")
    p.add_argument("--quick", action="store_true", help="a smoke run: 2 searches of 1-s probes unless given")
    p.add_argument("--no-disturbed", action="store_true", help="quiet searches only")
    p.add_argument("--json", metavar="OUT", help="write every search's figures to OUT")
    p.add_argument("--webscope", metavar="BIN", help="webscope binary (default: cargo build --release)")
    p.add_argument("--keep", action="store_true", help="keep the work directory (each search's lab report)")
    p.add_argument("--lab-args", default="", help="more arguments for each lab, e.g. '--repeat 3'")
    p.add_argument("--search-timeout", type=float, default=3600,
                   help="seconds before a search is stopped (default 3600)")
    args = p.parse_args()
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or not configs:
        p.error(f"--configs: unknown {', '.join(unknown) or '(empty)'}; choose from {', '.join(CONFIGS)}")
    args.configs = list(dict.fromkeys(configs))
    args.searches = args.searches if args.searches is not None else (2 if args.quick else 5)
    if args.searches < 1:
        p.error("--searches must be at least 1")
    args.duration = args.duration or ("1s" if args.quick else "3s")
    return args


def prepare(args):
    """The binary, the work directory and the 1 KiB file set both servers serve."""
    if any(CONFIGS[c][0] == "nginx" for c in args.configs):
        ensure_nginx()
    binary = webscope_binary(args.webscope)
    if not os.access(binary, os.X_OK):
        sys.exit(f"capacity_repeatability: {binary} is not an executable webscope; give --webscope BIN or build it")
    work = tempfile.mkdtemp(prefix="capacity-repeatability-")
    os.chmod(work, 0o755)
    fileset = os.path.join(work, "set")
    subprocess.run([binary, "fileset", "single", "--size", "1k", "--out", fileset, "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["chmod", "-R", "a+rX", fileset], check=True)
    return {"binary": binary, "work": work, "fileset": fileset, "disturber": Disturber(work)}


def measure(args, ctx, records):
    phases = ["quiet"] + ([] if args.no_disturbed else ["disturbed"])
    plan = [(phase, i, c) for phase in phases for i in range(args.searches) for c in args.configs]
    began = time.time()
    for k, (phase, i, config) in enumerate(plan):
        elapsed = time.time() - began
        eta = f", about {elapsed / k * (len(plan) - k) / 60:.0f} min left" if k else ""
        print(f"[{k + 1}/{len(plan)}] {phase} {config} search {i + 1}/{args.searches} "
              f"({elapsed / 60:.1f} min in{eta})", file=sys.stderr)
        r = search(config, phase, i, ctx, args)
        records.append(r)
        print(f"  -> {figure(r)} (exit {r['exit']}, {r['elapsed_s']:.0f} s, {r.get('probes', 0)} probes)",
              file=sys.stderr)


def main():
    args = parse_args()
    signal.signal(signal.SIGTERM, raise_interrupt)
    signal.signal(signal.SIGHUP, raise_interrupt)
    records, interrupted, ctx, aa = [], False, None, {}
    started = time.time()
    try:
        ctx = prepare(args)
        measure(args, ctx, records)
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: the figures below are what was measured so far", file=sys.stderr)
    try:
        if ctx:
            aa = aa_compares(records, ctx, args.configs)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        # A second Ctrl-C must not cut the cleaning short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if ctx:
            ctx["disturber"].stop()
        stop_all()
        if ctx and not args.keep:
            shutil.rmtree(ctx["work"], ignore_errors=True)
        elif ctx:
            print(f"work directory kept: {ctx['work']}", file=sys.stderr)
    print(f"Capacity searches: `webscope lab --experiment capacity --slo '{args.slo}' --duration {args.duration}"
          f"{' ' + args.lab_args if args.lab_args else ''}`, one 1 KiB file; servers on CPU 0 (nginx: 1 worker), "
          f"generator on CPU 1; {args.searches} search(es) per configuration, alternated; {len(records)} searches, "
          f"{sum(r.get('probes', 0) for r in records)} probes, {(time.time() - started) / 60:.1f} min in all"
          f"{' (interrupted)' if interrupted else ''}.")
    medians = quiet_table(records, args.configs, aa)
    violations = disturbed_table(records, args.configs, medians)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"slo": args.slo, "duration": args.duration, "searches": args.searches,
                       "interrupted": interrupted, "quiet_medians_rps": medians,
                       "disturbed_violations": violations, "aa_compares": aa, "records": records},
                      f, indent=2)
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
