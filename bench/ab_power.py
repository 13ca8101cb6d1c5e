#!/usr/bin/env python3
"""How often `webscope lab --experiment ab` gets the answer right (#48): repeated experiments on
pairs of nginx (one worker each, both pinned to CPU 0; the lab's generator on CPU 1), each
counting the verdicts per threshold: within, CROSSED, cannot be decided.

Cases (--cases), each B one directive off A's base configuration: `aa`, two identical nginx
(every CROSSED is a false alarm); `log`, B writes an unbuffered access log (#53 measured it about
10 % slower at 1 KiB); `logmid`, a log buffered by 64 KiB in the combined format and three more
variables: the ~5 % case (duet truth +5.7 and +5.5 % CPU per request, goodput -3.7 and -5.5 %);
`logbuf`, the combined log buffered (+3.0 to +5.3 % over three duet truths: less steady);
`logwide`, buffered with twice the variables (the ~10 % case, +10.2 %); `nocache`, B without
open_file_cache; and the candidates that came out near 0 or unsteady: `headers` (ten more
response headers, -0.6 %), `nosendfile` (+6.6 %, its pairs' IQR +1.0 .. +12.6), `noetag`.
Before a case's experiments, its true difference is measured with --truth pairs of
5-s `webscope load` runs, both ways (--truth-ways): solo, one server at a time interleaved (A B,
B A, ...), and duet, both at once as `lab --duet` loads them (goodput then compares the two
sharing CPU 0, not each alone). Goodput from the runs, nginx's CPU per request from
/proc/PID/schedstat. Each experiment's interval is checked against the truth of its own method
(--truth-by: the duet's when --lab-args has --duet), covered or not; both truths are printed.
--experiments 0 measures the truths only.

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
from serve_vs_nginx import free_port, wait_port, webscope_binary  # noqa: E402

# Each server's nginx directives: BASE, with a kind's own values put in place of its keys
# (the kinds differ in one thing each) and its "extra" lines added.
BASE = {"access_log": "off", "open_file_cache": "max=1000 inactive=20s", "sendfile": "on",
        "tcp_nodelay": "on", "etag": "on"}
# Ten response headers of 40 bytes each: nginx formats and sends each one on every response.
PAD_HEADERS = "\n".join(f'add_header X-Pad-{i} "{"x" * 24}";' for i in range(10))
WIDE_FORMAT = ("log_format wide '$remote_addr - $remote_user [$time_iso8601] \"$request\" $status "
               "$body_bytes_sent $bytes_sent $request_length \"$http_referer\" \"$http_user_agent\" "
               "$connection $connection_requests $msec $request_time $sent_http_content_type "
               "$sent_http_etag $sent_http_last_modified $server_port';")
# Between the two: the combined format and three more variables, one of them a response header.
MID_FORMAT = ("log_format mid '$remote_addr - $remote_user [$time_local] \"$request\" $status "
              "$body_bytes_sent \"$http_referer\" \"$http_user_agent\" $request_time $connection_requests "
              "$sent_http_etag';")
KINDS = {
    "plain": {},
    "log": {"access_log": "{work}/access.log combined"},
    # The same log, written by 64 KiB at a time: the format's work without a write(2) per request.
    "logbuf": {"access_log": "{work}/access.log combined buffer=64k"},
    "nocache": {"open_file_cache": "off"},
    "nosendfile": {"sendfile": "off"},
    "noetag": {"etag": "off"},
    "headers": {"extra": PAD_HEADERS},
    # The buffered log in a wider format: twice the variables formatted per request.
    "logwide": {"access_log": "{work}/access.log wide buffer=64k", "extra": WIDE_FORMAT},
    "logmid": {"access_log": "{work}/access.log mid buffer=64k", "extra": MID_FORMAT},
}
# A case is (A's kind, B's kind); named for what B does differently.
CASES = {"aa": ("plain", "plain"), "log": ("plain", "log"), "nocache": ("plain", "nocache"),
         "logbuf": ("plain", "logbuf"), "nosendfile": ("plain", "nosendfile"),
         "noetag": ("plain", "noetag"), "headers": ("plain", "headers"), "logwide": ("plain", "logwide"),
         "logmid": ("plain", "logmid")}


def directives(kind, work):
    """KINDS[kind]'s nginx http-level directives, one a line."""
    own = KINDS[kind]
    # The extra lines first: a log_format must come before the access_log that names it.
    lines = own.get("extra", "").splitlines() + [f"{k} {own.get(k, v)};" for k, v in BASE.items()]
    return "\n    ".join(lines).format(work=work)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="aa,logmid,log", help="which cases (default aa,logmid,log: A/A, ~5 %%, 10-20 %%)")
    p.add_argument("--experiments", type=int, default=20, help="experiments per case (default 20)")
    p.add_argument("--truth", type=int, default=40, help="interleaved pairs for the true difference (default 40)")
    p.add_argument("--truth-ways", default="solo,duet",
                   help="how the truth is measured: solo (one server at a time), duet (both at once); default both")
    p.add_argument("--truth-by", choices=("auto", "solo", "duet"), default="auto",
                   help="which truth the coverage is judged against (default: duet when --lab-args has --duet, else solo)")
    p.add_argument("--threshold", default="goodput>-3%,cpu_us<+3%", help="the experiments' thresholds")
    p.add_argument("--max-time", default="5m", help="each experiment's --max-time (default 5m)")
    p.add_argument("--hog", action="store_true", help="a CPU hog on CPU 0, 2 s of every 4 s")
    p.add_argument("--lab-args", default="", help="more arguments for each lab, e.g. '--duration 5s'")
    p.add_argument("--webscope", metavar="BIN", help="webscope binary (default: cargo build --release)")
    return p.parse_args()


class Nginx:
    """One nginx worker (no master) on CPU 0 serving `root`, configured as KINDS[kind]."""

    def __init__(self, root, work, kind):
        os.makedirs(work, exist_ok=True)
        self.port = free_port()
        conf = os.path.join(work, "nginx.conf")
        extra = directives(kind, work)
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
        self.log = os.path.join(work, "access.log")

    def trim_log(self):
        """Empties its access log, if it writes one: at tens of thousands of requests a second a
        series of experiments would otherwise write gigabytes. nginx appends (O_APPEND), so it
        writes on at the new end."""
        if os.path.exists(self.log):
            os.truncate(self.log, 0)

    def stop(self):
        kill_group(self.proc, signal.SIGQUIT, wait=10.0)


def run_ns(pid):
    """The process's CPU time so far, ns (schedstat's first field: finer than clock ticks)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def measure(ws, servers, fileset, work, seconds):
    """Closed-loop runs of `seconds` on `servers` at once (a duet when two), each by its own
    `webscope load` on CPU 1 started in the order given: each one's goodput and CPU µs per request."""
    before = {s: run_ns(s.proc.pid) for s in servers}
    procs = [subprocess.Popen(["taskset", "-c", "1", ws, "load", "--fileset", fileset, "--base", s.url,
                               "-c", "16", "-t", "1", "-d", f"{seconds}s", "-q", "--json",
                               os.path.join(work, f"truth-{s.port}.json")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for s in servers]
    for p in procs:
        if p.wait() != 0:
            raise RuntimeError(f"webscope load exited {p.returncode}")
    got = {}
    for s in servers:
        with open(os.path.join(work, f"truth-{s.port}.json")) as f:
            r = json.load(f)
        got[s] = (r["requests_per_s"], (run_ns(s.proc.pid) - before[s]) / 1e3 / max(r["requests"], 1))
    return got


def truth(ws, a, b, fileset, work, pairs, way):
    """The true change of B against A, per cent, measured `way`: "solo", interleaved 5-s runs of
    one server at a time (A B, B A, ...); "duet", 5-s runs of both at once, whose generator starts
    first alternating, as the lab's --duet loads them (goodput then compares the two sharing CPU 0).
    Per metric: the median of the pairs' ratios and their interquartile range, (median, q1, q3)."""
    ratios = {"goodput": [], "cpu_us": []}
    for i in range(pairs):
        order = (a, b) if i % 2 == 0 else (b, a)
        if way == "duet":
            got = measure(ws, order, fileset, work, 5)
        else:
            got = {}
            for s in order:
                got.update(measure(ws, [s], fileset, work, 5))
        ratios["goodput"].append(got[b][0] / got[a][0])
        ratios["cpu_us"].append(got[b][1] / got[a][1])
    out = {}
    for k, v in ratios.items():
        q1, med, q3 = statistics.quantiles(v, n=4) if len(v) > 1 else (v[0],) * 3
        out[k] = tuple(100 * (x - 1) for x in (med, q1, q3))
    return out


def said(true):
    return ", ".join(f"{k} {m:+.1f} % (pairs' IQR {q1:+.1f} .. {q3:+.1f})" for k, (m, q1, q3) in true.items())


def experiment(ws, a, b, fileset, out, args):
    """One lab --experiment ab: its exit, verdicts, intervals and wall time."""
    start = time.monotonic()
    cmd = ["taskset", "-c", "1", ws, "lab", "--experiment", "ab", "--target", a.url, "--candidate", b.url,
           "--fileset", fileset, "--out", out, "--threshold", args.threshold, "--max-time", args.max_time, "--quiet"] + args.lab_args.split()
    with open(out + ".stderr", "w+") as err:
        code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=err).returncode
        err.seek(0)
        said_last = (err.read().strip().splitlines() or [""])[-1]
    elapsed = time.monotonic() - start
    try:
        with open(os.path.join(out, "report.json")) as f:
            ab = json.load(f)["ab"]
    except (OSError, ValueError, KeyError):
        # A lab that stopped before its verdict (a refusal, a crash): counted by its exit, not a verdict.
        print(f"  the lab exited {code} without a verdict: {said_last}", file=sys.stderr, flush=True)
        return code, {}, {}, (0, 0), elapsed
    rows = {r["metric"]: r for r in (ab.get("comparison") or {}).get("rows", [])}
    verdicts = {v["threshold"]: v["verdict"] for v in ab["verdict"]["verdicts"]}
    # capacity>-5%: each side's lower edge L from the two searches in lockstep.
    searched = ab.get("capacity") or {}
    for side in ("a", "b"):
        ending = searched.get(side) or {}
        verdicts[f"L_{side}"] = ending.get("capacity_rps", ending.get("kind"))
    # A crossing of the brackets is checked by paired probes: B missed alone / A missed alone /
    # both met / both missed.
    check = searched.get("check")
    if check:
        verdicts["check"] = "/".join(str(check[k]) for k in ("b_missed", "a_missed", "both_met", "both_missed"))
    # Rounds kept and rounds disturbed (taken again, never used): a hog shows in the second.
    return code, verdicts, rows, (ab["verdict"]["rounds"], ab["verdict"].get("disturbed", 0)), elapsed


def hog():
    """A CPU hog on CPU 0, busy 2 s of every 4 s."""
    code = "import time\nwhile True:\n  t=time.time()\n  while time.time()-t<2: pass\n  time.sleep(2)\n"
    return spawn(["taskset", "-c", "0", sys.executable, "-c", code])


def main():
    args = parse_args()
    signal.signal(signal.SIGTERM, raise_interrupt)
    ensure_nginx()
    ws = webscope_binary(args.webscope)
    ways = [w for w in args.truth_ways.split(",") if w]
    by = args.truth_by if args.truth_by != "auto" else ("duet" if "--duet" in args.lab_args.split() else "solo")
    if args.truth and by not in ways:
        sys.exit(f"ab_power: coverage is judged against the {by} truth, which --truth-ways {args.truth_ways!r} leaves out")
    results, truths = [], {}
    try:
        with tempfile.TemporaryDirectory(prefix="ab-power-") as work:
            fileset = os.path.join(work, "set")
            subprocess.run([ws, "fileset", "specweb96", "--ops", "1", "--out", fileset], check=True,
                           stdout=subprocess.DEVNULL)
            for case in args.cases.split(","):
                a_kind, b_kind = CASES[case]
                a = Nginx(fileset, os.path.join(work, case, "a"), a_kind)
                b = Nginx(fileset, os.path.join(work, case, "b"), b_kind)
                for way in ways if args.truth else []:
                    started = time.monotonic()
                    truths[case, way] = truth(ws, a, b, fileset, work, args.truth, way)
                    b.trim_log()
                    print(f"{case}: true change, {way} ({args.truth} pairs, {time.monotonic() - started:.0f} s, "
                          f"load average {os.getloadavg()[0]:.1f}): {said(truths[case, way])}", flush=True)
                # Coverage is judged against the truth measured the way the experiments measure.
                true = {k: v[0] for k, v in truths.get((case, by), {}).items()}
                hogging = hog() if args.hog else None
                for i in range(args.experiments):
                    out = os.path.join(work, case, f"x{i}")
                    code, verdicts, rows, rounds, elapsed = experiment(ws, a, b, fileset, out, args)
                    covered = {}
                    for metric, t in true.items():
                        iv = rows.get(metric, {}).get("interval_pct")
                        covered[metric] = iv is not None and iv[0] <= t <= iv[1]
                    results.append((case, code, verdicts, covered, rounds, elapsed))
                    b.trim_log()
                    print(f"{case} #{i + 1}: exit {code}, {rounds[0]} rounds ({rounds[1]} disturbed), {elapsed:.0f} s, {verdicts}, covered {covered}",
                          flush=True)
                if hogging:
                    kill_group(hogging)
                a.stop()
                b.stop()
    except KeyboardInterrupt:
        print("interrupted: what was measured so far", file=sys.stderr)
    finally:
        stop_all()
    table(results, truths, by)


def table(results, truths, by):
    """The true changes measured each way, then per case the verdicts and the coverage per metric
    (against the `by` truth)."""
    if truths:
        print("\n| case | truth | goodput (median, pairs' IQR) | cpu_us (median, pairs' IQR) |")
        print("|---|---|---|---|")
        for (case, way), t in truths.items():
            cells = [f"{m:+.1f} % ({q1:+.1f} .. {q3:+.1f})" for m, q1, q3 in (t["goodput"], t["cpu_us"])]
            print(f"| {case} | {way}{' (coverage)' if way == by else ''} | {cells[0]} | {cells[1]} |")
    print(f"\n| case | experiments | exit 0 / 1 / 3 | rounds (disturbed), median | within | CROSSED | undecided | goodput: CROSSED / covers the "
          f"{by} truth | cpu_us: CROSSED / covers the {by} truth | median time |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for case in dict.fromkeys(r[0] for r in results):
        rs = [r for r in results if r[0] == case]
        exits = "/".join(str(sum(1 for r in rs if r[1] == c)) for c in (0, 1, 3))
        count = lambda said: sum(list(r[2].values()).count(said) for r in rs)  # noqa: E731
        cells = []
        for metric in ("goodput", "cpu_us"):
            crossed = sum(1 for r in rs for k, v in r[2].items() if k.startswith(metric) and v == "crossed")
            checked = [r[3][metric] for r in rs if metric in r[3]]
            cells.append(f"{crossed} / {sum(checked)} of {len(checked)}" if checked else f"{crossed} / -")
        kept, disturbed = (statistics.median(r[4][k] for r in rs) for k in (0, 1))
        print(f"| {case} | {len(rs)} | {exits} | {kept:.0f} ({disturbed:.0f}) | {count('within')} | {count('crossed')} | {count('undecided')} | "
              f"{cells[0]} | {cells[1]} | {statistics.median(r[5] for r in rs):.0f} s |")


if __name__ == "__main__":
    main()
