#!/usr/bin/env python3
"""webscope characterize and load --replay vs GoAccess on a busy site's logs: time and peak RSS.

Issue 36. Writes synthetic Combined logs (--lines, default 2M and 20M), and on each, side by
side in one run: `webscope characterize --out DIR` and GoAccess (`--log-format=COMBINED -o
report.html`, no real time), each writing its page, then `webscope load --replay LOG -d 5s`
against a `webscope serve` on 127.0.0.1 (an empty root: every request is a 404; what is
measured is the replaying generator's memory, which depends on the log, not on the answers).
Each command's wall time, CPU time and peak RSS come from wait4() on it (ru_maxrss: the
largest resident set the process ever had). Linux counts in a child's ru_maxrss the resident
set of the process it was forked from, so the logs are written by a process of their own and
this one stays small: its own peak, printed at the end, is the floor under every figure. The
log was just written, so the tools read it mostly from the page cache (a tool that takes 10 GB
may push part of a 3 GB log out of it): what is measured is parsing and keeping, not the disk.

The logs: 200 000 URLs with Zipf popularity (exponent --zipf), each with a size drawn once from
SURGE's hybrid (Barford & Crovella 1998: a lognormal body, mu 9.357, sigma 1.318, and a Pareto
tail beyond 133 KB, alpha 1.1, for 7 % of the files); 150 000 clients (IPv4 and a few IPv6)
with Zipf activity, each with its own user agent; statuses 200, 304 (0 bytes), 404 on missing
paths, a few HEAD and POST. Arrivals at --rate per second: Poisson within each second, its
rate modulated (--arrivals bursty, the default) by a day's cycle (+-50 %, from its mean, rising)
and a cascade of lognormal factors (sigma 0.3, mean 1) renewed every 10 s, 100 s and 1000 s, so
the counts are bursty at every scale as Web traffic is (characterize reads IDC ~140 at 1 s and
Hurst ~0.9 in them); or at a constant rate (--arrivals poisson). Deterministic from --seed.
About 160 bytes a line. The log is in time order, as nginx writes it.

Goals (issue 36): characterize at least 20x GoAccess's speed; its peak RSS <= 512 MiB at 20 M
lines and within 1.25x of its 2 M-line figure; load --replay <= 512 MiB at 20 M lines. The
goals are judged on the smallest and the largest size given, and say so when those are not
2 M and 20 M.

Usage: bench/characterize_vs_goaccess.py [--lines 2M,20M] [--keep DIR] [--json FILE]
                                         [--skip-goaccess-above N] [--webscope PATH]
                                         [--rate 500] [--arrivals bursty|poisson] [--seed 1]
Needs: goaccess (installed with apt-get if missing and running as root), cargo unless
--webscope is given. Disk: about 150 bytes a line (3.3 GB at 20 M lines) in a temporary
directory, deleted at the end unless --keep. Traffic stays on 127.0.0.1.
"""
import argparse
import json
import math
import multiprocessing
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_vs_nginx import ROOT, free_port, wait_port, webscope_binary  # noqa: E402

URLS = 200_000
CLIENTS = 150_000
# 2024-01-15 00:00:00 UTC: in the past, so no reader takes it for a clock error.
START_UNIX = 1_705_276_800
# SURGE's file sizes (Barford & Crovella 1998).
BODY_MU, BODY_SIGMA = 9.357, 1.318
TAIL_K, TAIL_ALPHA, TAIL_SHARE = 133_000, 1.1, 0.07
# Shares of the lines that are not a plain 200 GET, cumulative, tested against one uniform draw.
P_304, P_404, P_HEAD, P_POST = 0.06, 0.08, 0.085, 0.09
# Lines are built and written this many at a time: memory stays ~100 MB whatever the length.
CHUNK = 250_000
MIB = 1 << 20
GOAL_RSS_MIB = 512
GOAL_SPEEDUP = 20.0
GOAL_RSS_GROWTH = 1.25

EXTENSIONS = [("html", 0.45), ("gif", 0.2), ("jpg", 0.2), ("css", 0.05), ("js", 0.05), ("pdf", 0.03),
              ("zip", 0.02)]
AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) AppleWebKit/605.1.15 (KHTML, like Gecko) Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/8.5.0",
    "python-requests/2.31.0",
    "Wget/1.21.4",
]


# ---------------------------------------------------------------------------------------------
# The log generator


def zipf_cumulative(n, exponent):
    """Cumulative weights of ranks 1..n under Zipf(exponent), for random.choices."""
    total, out = 0.0, []
    for rank in range(1, n + 1):
        total += rank ** -exponent
        out.append(total)
    return out


def file_size(rng):
    if rng.random() < TAIL_SHARE:
        # 1 - random() is in (0, 1]: never zero to a negative power.
        return min(int(TAIL_K * (1.0 - rng.random()) ** (-1.0 / TAIL_ALPHA)), 2 << 30)
    return max(1, int(rng.lognormvariate(BODY_MU, BODY_SIGMA)))


def make_urls(rng, count):
    """Per URL (in popularity order: index 0 is the most requested) its path and the middle of
    its 200 line, '"GET path HTTP/1.1" 200 size'. Popularity is independent of size and type."""
    kinds = rng.choices([e for e, _ in EXTENSIONS], weights=[w for _, w in EXTENSIONS], k=count)
    paths, mids = [], []
    for i in rng.sample(range(count), count):
        path = f"/d{i % 997}/f{i}.{kinds[i]}"
        paths.append(path)
        mids.append(f'"GET {path} HTTP/1.1" 200 {file_size(rng)}')
    return paths, mids


def make_clients(rng, count):
    """Per client its line's start ('addr - - [') and end (' "referer" "agent"\\n')."""
    seen, starts, ends = set(), [], []
    while len(starts) < count:
        if rng.random() < 0.05:
            addr = "2001:db8:%x:%x::%x" % (rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(16))
        else:
            addr = "%d.%d.%d.%d" % (rng.randint(1, 223), rng.getrandbits(8), rng.getrandbits(8), rng.randint(1, 254))
        if addr in seen:
            continue
        seen.add(addr)
        referer = "-" if rng.random() < 0.7 else "https://www.example.org/"
        starts.append(f"{addr} - - [")
        ends.append(f' "{referer}" "{rng.choice(AGENTS)}"\n')
    return starts, ends


def second_counts(rng, rate, bursty):
    """Endless per-second request counts: Poisson at a rate that is constant, or modulated by a
    day's cycle and lognormal factors renewed every 10, 100 and 1000 s (each of mean 1)."""
    # 0.3 a level: together a factor of 0.5 to 1.7 most of the time (IDC ~140 at 1 s at 500/s).
    sigma = 0.3
    mean_one = math.exp(-sigma * sigma / 2)
    factors = [1.0, 1.0, 1.0]
    second = 0
    while True:
        lam = rate
        if bursty:
            for level, block in enumerate((10, 100, 1000)):
                if second % block == 0:
                    factors[level] = rng.lognormvariate(0.0, sigma) * mean_one
            day = 1.0 + 0.5 * math.sin(2 * math.pi * second / 86_400)
            lam = rate * day * factors[0] * factors[1] * factors[2]
        yield poisson(rng, lam)
        second += 1


def poisson(rng, lam):
    """A Poisson draw: Knuth's product of uniforms for small means; above 30 the normal
    approximation, which keeps the mean and variance and loses only the skew (1/sqrt(lam))."""
    if lam > 30:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def clf_time(unix):
    return time.strftime("%d/%b/%Y:%H:%M:%S +0000] ", time.gmtime(unix))


def rare_middle(rng, paths, url, draw):
    """The middle of a line that is not a plain 200 GET."""
    if draw < P_304:
        return f'"GET {paths[url]} HTTP/1.1" 304 0'
    if draw < P_404:
        return f'"GET /missing/{url % 1000}.html HTTP/1.1" 404 153'
    if draw < P_HEAD:
        return f'"HEAD {paths[url]} HTTP/1.1" 200 0'
    return f'"POST /search?q={url % 5000} HTTP/1.1" 200 {2000 + url % 3000}'


def write_log(path, lines, args):
    """Writes `lines` Combined lines to `path`; returns (bytes, seconds spanned)."""
    rng = random.Random(args.seed)
    paths, mids = make_urls(rng, URLS)
    starts, ends = make_clients(rng, CLIENTS)
    url_weights = zipf_cumulative(URLS, args.zipf)
    client_weights = zipf_cumulative(CLIENTS, 0.8)
    counts = second_counts(rng, args.rate, args.arrivals == "bursty")
    second, left_in_second, written, size = 0, next(counts), 0, 0
    with open(path, "w", encoding="ascii", buffering=8 * MIB) as out:
        while written < lines:
            n = min(CHUNK, lines - written)
            stamps = []
            while len(stamps) < n:
                take = min(left_in_second, n - len(stamps))
                stamps.extend([clf_time(START_UNIX + second)] * take)
                left_in_second -= take
                while left_in_second == 0:
                    second += 1
                    left_in_second = next(counts)
            urls = rng.choices(range(URLS), cum_weights=url_weights, k=n)
            clients = rng.choices(range(CLIENTS), cum_weights=client_weights, k=n)
            draws = [rng.random() for _ in range(n)]
            text = "".join([
                starts[c] + ts + (mids[u] if d >= P_POST else rare_middle(rng, paths, u, d)) + ends[c]
                for c, ts, u, d in zip(clients, stamps, urls, draws)
            ])
            out.write(text)
            size += len(text)
            written += n
    return size, second + 1


# ---------------------------------------------------------------------------------------------
# Measuring


def measure(cmd, work, name):
    """Runs cmd to its end; returns wall s, CPU s (user + system), peak RSS MiB and exit code,
    all from wait4() on it. Its stderr goes to work/name.err (its last line is shown on failure)."""
    err_path = os.path.join(work, f"{name}.err")
    start = time.monotonic()
    with open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    note = ""
    if code != 0:
        with open(err_path, errors="replace") as err:
            tail = [line.strip() for line in err if line.strip()]
        note = f"exit {code}" + (f": {tail[-1]}" if tail else (" (killed)" if code < 0 else ""))
    return {"seconds": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024,
            "exit": code, "note": note}


def ensure_goaccess():
    """The goaccess binary, installed with apt-get when missing; None (said) when that fails."""
    found = shutil.which("goaccess")
    if found:
        return found
    print("installing goaccess (apt-get) ...", file=sys.stderr, flush=True)
    try:
        subprocess.run(["apt-get", "install", "-y", "-qq", "goaccess"], check=True, stdout=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        try:
            subprocess.run(["apt-get", "update", "-qq"], check=True)
            subprocess.run(["apt-get", "install", "-y", "-qq", "goaccess"], check=True, stdout=subprocess.DEVNULL)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"cannot install goaccess ({e}): GoAccess is left out; install it "
                  "(apt-get install goaccess) to compare", file=sys.stderr)
            return None
    return shutil.which("goaccess")


def tool_version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


def run_characterize(binary, log, work):
    out = os.path.join(work, "characterize")
    result = measure([binary, "characterize", "--quiet", "--out", out, log], work, "characterize")
    shutil.rmtree(out, ignore_errors=True)
    return result


def run_goaccess(goaccess, log, work):
    html = os.path.join(work, "goaccess.html")
    result = measure([goaccess, log, "--log-format=COMBINED", "--no-global-config", "--no-progress",
                      "-o", html], work, "goaccess")
    if os.path.exists(html):
        os.remove(html)
    return result


def run_replay(binary, log, work, duration):
    """load --replay LOG -d duration against a webscope serve of an empty root on 127.0.0.1."""
    root = os.path.join(work, "empty-root")
    os.makedirs(root, exist_ok=True)
    port = free_port()
    server = subprocess.Popen([binary, "serve", "--root", root, "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = os.path.join(work, "replay.json")
    try:
        wait_port(port, limit=30.0)
        result = measure([binary, "load", "--replay", log, "--base", f"http://127.0.0.1:{port}/", "-d",
                          duration, "--quiet", "--json", report], work, "replay")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    try:
        with open(report) as f:
            sent = json.load(f).get("requests")
        os.remove(report)
        result["requests_sent"] = sent
    except (OSError, ValueError):
        pass
    return result


# ---------------------------------------------------------------------------------------------
# The run and its table


def parse_count(text):
    """'2M', '20m', '500k', '150000' -> int; a bad one ends the bench with what to write."""
    units = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
    t = text.strip().lower().replace("_", "")
    try:
        if t and t[-1] in units:
            value = int(float(t[:-1]) * units[t[-1]])
        else:
            value = int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a line count: write e.g. 2M, 500k or 150000")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}': a line count must be positive")
    return value


def parse_counts(text):
    return sorted({parse_count(part) for part in text.split(",") if part.strip()})


def human(n):
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k" if n >= 1000 else str(n)


def check_disk(work, lines):
    need = lines * 160
    free = shutil.disk_usage(work).free
    if free < need + (2 << 30):
        sys.exit(f"{human(lines)} lines need about {need / 1e9:.1f} GB in {work} and {free / 1e9:.1f} GB are "
                 "free (2 GB kept spare): give smaller --lines or free space (TMPDIR chooses the directory)")


def measure_size(lines, args, binary, goaccess, work, keep):
    """Every tool on one log of `lines` lines; returns the rows."""
    log = os.path.join(keep or work, f"combined-{human(lines)}.log")
    check_disk(os.path.dirname(log), lines)
    start = time.monotonic()
    # In a process of its own: the generator's tables (~200 MB) would otherwise be counted in
    # every later child's peak RSS.
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        size, span = pool.apply(write_log, (log, lines, args))
    print(f"\n{human(lines)} lines: {size / 1e6:.0f} MB over {span} s ({lines / span:.0f} req/s) "
          f"written in {time.monotonic() - start:.0f} s", flush=True)
    rows = []

    def row(tool, result):
        result.update({"lines": lines, "mb": size / 1e6, "tool": tool})
        rows.append(result)
        print("  " + format_row(result), flush=True)

    try:
        row("webscope characterize", run_characterize(binary, log, work))
        if goaccess is None:
            row("goaccess", {"skipped": "goaccess is not installed"})
        elif args.skip_goaccess_above is not None and lines > args.skip_goaccess_above:
            row("goaccess", {"skipped": f"skipped: more than --skip-goaccess-above {human(args.skip_goaccess_above)}"})
        else:
            row("goaccess", run_goaccess(goaccess, log, work))
        row(f"webscope load --replay -d {args.replay_duration}", run_replay(binary, log, work, args.replay_duration))
    finally:
        if not keep:
            os.remove(log)
    return rows


HEADER = f"{'lines':>6} {'MB':>6}  {'tool':<32} {'seconds':>8} {'CPU s':>8} {'peak RSS MiB':>13}"


def format_row(r):
    head = f"{human(r['lines']):>6} {r['mb']:6.0f}  {r['tool']:<32}"
    if "skipped" in r:
        return f"{head} {r['skipped']}"
    line = f"{head} {r['seconds']:8.1f} {r['cpu_s']:8.1f} {r['rss_mib']:13.0f}"
    if r.get("requests_sent") is not None:
        line += f"  ({r['requests_sent']} requests sent)"
    return line + (f"  {r['note']}" if r["note"] else "")


def figure(rows, lines, tool):
    for r in rows:
        if r["lines"] == lines and r["tool"].startswith(tool) and "skipped" not in r and r["exit"] == 0:
            return r
    return None


def verdict(ok):
    return "not measured" if ok is None else "met" if ok else "NOT met"


def judge(rows, sizes):
    """Ratios and goals: one entry per goal, {goal, figure, verdict}. Speed is judged on wall
    time; the ratio of CPU seconds is given beside it, as it moves less on a busy machine."""
    small, large = sizes[0], sizes[-1]
    if small == large:
        caveat = f" (the goal is stated for 20M; measured at {human(large)} only)"
    elif (small, large) != (2_000_000, 20_000_000):
        caveat = f" (the goal is stated for 2M and 20M; measured at {human(small)} and {human(large)})"
    else:
        caveat = ""
    goals = []
    for lines in sizes:
        ws, ga = figure(rows, lines, "webscope characterize"), figure(rows, lines, "goaccess")
        speed = ga["seconds"] / ws["seconds"] if ws and ga else None
        cpu = f" ({ga['cpu_s'] / ws['cpu_s']:.1f}x in CPU seconds)" if ws and ga else ""
        goals.append({"goal": f"characterize >= {GOAL_SPEEDUP:g}x GoAccess's speed at {human(lines)}",
                      "figure": None if speed is None else f"{speed:.1f}x{cpu}",
                      "verdict": verdict(None if speed is None else speed >= GOAL_SPEEDUP)})
    for tool, goal_name in (("webscope characterize", "characterize"), ("webscope load --replay", "load --replay")):
        at_large = figure(rows, large, tool)
        goals.append({"goal": f"{goal_name} peak RSS <= {GOAL_RSS_MIB} MiB at {human(large)}{caveat}",
                      "figure": None if at_large is None else f"{at_large['rss_mib']:.0f} MiB",
                      "verdict": verdict(None if at_large is None else at_large["rss_mib"] <= GOAL_RSS_MIB)})
        at_small = figure(rows, small, tool)
        growth = at_large["rss_mib"] / at_small["rss_mib"] if at_large and at_small and large > small else None
        if goal_name == "characterize" or growth is not None:
            stated = goal_name == "characterize"
            ratio = f"at {human(large)} / at {human(small)}" if large > small else "at 20M / at 2M (one size given)"
            goals.append({
                "goal": f"{goal_name} peak RSS {ratio}"
                        + (f" <= {GOAL_RSS_GROWTH:g}" + (caveat if large > small else "") if stated
                           else " (no goal: for reading)"),
                "figure": None if growth is None else f"{growth:.2f}x",
                "verdict": verdict(None if growth is None else growth <= GOAL_RSS_GROWTH) if stated else "-"})
    return goals


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="examples:\n  bench/characterize_vs_goaccess.py\n"
                                            "  bench/characterize_vs_goaccess.py --lines 2M --json bench36.json\n"
                                            "  bench/characterize_vs_goaccess.py --skip-goaccess-above 2M "
                                            "--webscope target/release/webscope")
    parser.add_argument("--lines", type=parse_counts, default=[2_000_000, 20_000_000],
                        help="log sizes in lines, comma-separated (default 2M,20M)")
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="write the logs into DIR and keep them (default: a temporary directory, deleted)")
    parser.add_argument("--json", metavar="FILE", default=None, help="write the rows and goals as JSON here")
    parser.add_argument("--skip-goaccess-above", type=parse_count, metavar="N", default=None,
                        help="no GoAccess on logs of more than N lines (it took 17 min at 20M here)")
    parser.add_argument("--webscope", metavar="PATH", default=None,
                        help="the webscope binary (default: cargo build --release -p webscope)")
    parser.add_argument("--rate", type=float, default=500.0, help="requests per second before modulation (default 500; the bursty day "
                             "cycle, rising from the start, makes it ~680 over 2M-20M lines)")
    parser.add_argument("--arrivals", choices=["bursty", "poisson"], default="bursty",
                        help="bursty (default): modulated at every scale; poisson: a constant rate")
    parser.add_argument("--zipf", type=float, default=0.9, help="the URLs' Zipf exponent (default 0.9)")
    parser.add_argument("--seed", type=int, default=1, help="the generator's seed (default 1)")
    parser.add_argument("--replay-duration", default="5s", help="load --replay's -d (default 5s)")
    args = parser.parse_args()
    if not args.lines:
        parser.error("--lines needs at least one size, e.g. 2M,20M")
    if args.rate <= 0:
        parser.error("--rate must be positive, e.g. 500")
    binary = webscope_binary(args.webscope)
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} is not an executable file: give the webscope binary with --webscope PATH")
    goaccess = ensure_goaccess()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    work = tempfile.mkdtemp(prefix="webscope-bench36-")
    print(f"webscope: {binary} ({tool_version([binary, '--version'])}); GoAccess: "
          f"{tool_version([goaccess, '--version']) if goaccess else 'absent'}; {os.cpu_count()} CPUs; "
          f"load average at start {loadavg()}")
    print(f"logs: {URLS} URLs (Zipf {args.zipf}), {CLIENTS} clients, {args.arrivals} arrivals at "
          f"{args.rate:g} req/s, seed {args.seed}; one run of each tool per log")
    rows = []
    try:
        for lines in args.lines:
            rows += measure_size(lines, args, binary, goaccess, work, args.keep)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nload average at end {loadavg()} (other work on this machine makes the seconds noisy; "
          f"peak RSS is steadier, and no figure can be below this bench's own peak, {floor:.0f} MiB)\n")
    print(HEADER)
    for r in rows:
        print(format_row(r))
    goals = judge(rows, args.lines)
    print()
    for g in goals:
        print(f"  {g['goal']}: {g['figure'] or '-'} ({g['verdict']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "goals": goals, "rss_floor_mib": floor, "arrivals": args.arrivals,
                       "rate": args.rate, "zipf": args.zipf, "seed": args.seed, "urls": URLS, "clients": CLIENTS}, f, indent=2)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
