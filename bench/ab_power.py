#!/usr/bin/env python3
"""How often `webscope lab --experiment ab` gets the answer right (#48): repeated experiments on
pairs of nginx (one worker each, both pinned to CPU 0; the lab's generator on CPU 1), each
counting the verdicts per threshold: within, CROSSED, cannot be decided.

Cases (--cases): `aa`, two identical nginx (every CROSSED is a false alarm); `log`, B writes an
unbuffered access log (#53 measured it about 10 % slower at 1 KiB); `nocache`, B without
open_file_cache. Before a case's experiments, its true difference is measured with --truth
interleaved pairs of longer `webscope load` runs (goodput and nginx's CPU per request, read from
/proc), and each experiment's interval is checked against it (covered or not).

--hog runs a CPU hog on CPU 0 half of every 4 s (the servers' CPU), as a neighbour would: the
verdicts must then be within or undecided, never wrong.

Prints each experiment as it ends and a Markdown table per case. Traffic stays on 127.0.0.1;
every process started is stopped on any exit (Ctrl-C prints what was measured so far). Needs
nginx (installed as root if missing), taskset and cargo (unless --webscope).
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capacity_repeatability import ensure_nginx, kill_group, raise_interrupt, spawn, stop_all  # noqa: E402
from serve_vs_nginx import cpu_ticks, free_port, wait_port, webscope_binary  # noqa: E402

CONFIGS = {
    "plain": "access_log off;\n    open_file_cache max=1000 inactive=20s;",
    "log": "access_log {work}/access.log combined;\n    open_file_cache max=1000 inactive=20s;",
    "nocache": "access_log off;",
}
CASES = {"aa": ("plain", "plain"), "log": ("plain", "log"), "nocache": ("plain", "nocache")}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="aa,log,nocache", help="which cases (default aa,log,nocache)")
    p.add_argument("--experiments", type=int, default=20, help="experiments per case (default 20)")
    p.add_argument("--truth", type=int, default=40, help="interleaved pairs for the true difference (default 40)")
    p.add_argument("--threshold", default="goodput>-3%,cpu_us<+3%", help="the experiments' thresholds")
    p.add_argument("--max-time", default="5m", help="each experiment's --max-time (default 5m)")
    p.add_argument("--hog", action="store_true", help="a CPU hog on CPU 0, 2 s of every 4 s")
    p.add_argument("--lab-args", default="", help="more arguments for each lab, e.g. '--duration 5s'")
    p.add_argument("--webscope", metavar="BIN", help="webscope binary (default: cargo build --release)")
    return p.parse_args()


class Nginx:
    """One nginx worker (no master) on CPU 0 serving `root`, configured as CONFIGS[kind]."""

    def __init__(self, root, work, kind):
        os.makedirs(work, exist_ok=True)
        self.port = free_port()
        conf = os.path.join(work, "nginx.conf")
        extra = CONFIGS[kind].format(work=work)
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
    {extra}
    sendfile on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{self.port} reuseport;
        root {root};
    }}
}}
""")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = spawn(["taskset", "-c", "0", nginx, "-c", conf, "-p", work])
        wait_port(self.port)
        self.url = f"http://127.0.0.1:{self.port}/"

    def stop(self):
        kill_group(self.proc, signal.SIGQUIT, wait=10.0)


def load_once(ws, server, fileset, work):
    """One 5-s closed-loop run: goodput and the server's CPU µs per request."""
    out = os.path.join(work, "truth.json")
    before = cpu_ticks(server.proc.pid)
    subprocess.run(["taskset", "-c", "1", ws, "load", "--fileset", fileset, "--base", server.url,
                    "-c", "16", "-t", "1", "-d", "5s", "-q", "--json", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ticks = cpu_ticks(server.proc.pid) - before
    with open(out) as f:
        r = json.load(f)
    requests = r["requests"]
    return r["requests_per_s"], 1e6 * ticks / os.sysconf("SC_CLK_TCK") / max(requests, 1)


def truth(ws, a, b, fileset, work, pairs):
    """The true change of B against A: medians of interleaved pairs' ratios (goodput, CPU)."""
    ratios = {"goodput": [], "cpu_us": []}
    for i in range(pairs):
        order = (a, b) if i % 2 == 0 else (b, a)
        got = {}
        for s in order:
            got[s] = load_once(ws, s, fileset, work)
        ratios["goodput"].append(got[b][0] / got[a][0])
        ratios["cpu_us"].append(got[b][1] / got[a][1])
    return {k: 100 * (statistics.median(v) - 1) for k, v in ratios.items()}


def experiment(ws, a, b, fileset, out, args):
    """One lab --experiment ab: its exit, verdicts, intervals and wall time."""
    start = time.monotonic()
    cmd = ["taskset", "-c", "1", ws, "lab", "--experiment", "ab", "--target", a.url, "--candidate", b.url,
           "--fileset", fileset, "--out", out, "--threshold", args.threshold, "--max-time", args.max_time, "--quiet"] + args.lab_args.split()
    code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    elapsed = time.monotonic() - start
    with open(os.path.join(out, "report.json")) as f:
        ab = json.load(f)["ab"]
    rows = {r["metric"]: r for r in (ab.get("comparison") or {}).get("rows", [])}
    verdicts = {v["threshold"]: v["verdict"] for v in ab["verdict"]["verdicts"]}
    # capacity>-5%: each side's lower edge L from the two searches in lockstep.
    searched = ab.get("capacity") or {}
    for side in ("a", "b"):
        ending = searched.get(side) or {}
        verdicts[f"L_{side}"] = ending.get("capacity_rps", ending.get("kind"))
    return code, verdicts, rows, ab["verdict"]["rounds"], elapsed


def hog():
    """A CPU hog on CPU 0, busy 2 s of every 4 s."""
    code = "import time\nwhile True:\n  t=time.time()\n  while time.time()-t<2: pass\n  time.sleep(2)\n"
    return spawn(["taskset", "-c", "0", sys.executable, "-c", code])


def main():
    args = parse_args()
    signal.signal(signal.SIGTERM, raise_interrupt)
    ensure_nginx()
    ws = webscope_binary(args.webscope)
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="ab-power-") as work:
            fileset = os.path.join(work, "set")
            subprocess.run([ws, "fileset", "specweb96", "--ops", "1", "--out", fileset], check=True,
                           stdout=subprocess.DEVNULL)
            for case in args.cases.split(","):
                a_kind, b_kind = CASES[case]
                a = Nginx(fileset, os.path.join(work, case, "a"), a_kind)
                b = Nginx(fileset, os.path.join(work, case, "b"), b_kind)
                true = truth(ws, a, b, fileset, work, args.truth) if args.truth else {}
                print(f"{case}: true change " + ", ".join(f"{k} {v:+.1f} %" for k, v in true.items()), flush=True)
                hogging = hog() if args.hog else None
                for i in range(args.experiments):
                    out = os.path.join(work, case, f"x{i}")
                    code, verdicts, rows, rounds, elapsed = experiment(ws, a, b, fileset, out, args)
                    covered = {}
                    for metric, t in true.items():
                        iv = rows.get(metric, {}).get("interval_pct")
                        covered[metric] = iv is not None and iv[0] <= t <= iv[1]
                    results.append((case, code, verdicts, covered, rounds, elapsed))
                    print(f"{case} #{i + 1}: exit {code}, {rounds} rounds, {elapsed:.0f} s, {verdicts}, covered {covered}",
                          flush=True)
                if hogging:
                    kill_group(hogging)
                a.stop()
                b.stop()
    except KeyboardInterrupt:
        print("interrupted: what was measured so far", file=sys.stderr)
    finally:
        stop_all()
    table(results)


def table(results):
    print("\n| case | experiments | exit 0 / 1 / 3 | within | CROSSED | undecided | interval covers the truth | median time |")
    print("|---|---|---|---|---|---|---|---|")
    for case in dict.fromkeys(r[0] for r in results):
        rs = [r for r in results if r[0] == case]
        exits = "/".join(str(sum(1 for r in rs if r[1] == c)) for c in (0, 1, 3))
        count = lambda said: sum(list(r[2].values()).count(said) for r in rs)  # noqa: E731
        covered = sum(sum(r[3].values()) for r in rs)
        checked = sum(len(r[3]) for r in rs)
        print(f"| {case} | {len(rs)} | {exits} | {count('within')} | {count('crossed')} | {count('undecided')} | "
              f"{covered} of {checked} | {statistics.median(r[5] for r in rs):.0f} s |")


if __name__ == "__main__":
    main()
