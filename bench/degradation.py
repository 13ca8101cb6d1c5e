#!/usr/bin/env python3
"""The Hibino et al. experiment on webscope serve's services: workload set 1 (30 light clients,
heavy clients 0..40), closed loop, under each scheduling policy. Prints, per policy, each
service's throughput as heavy load grows, the light service's degradation (throughput at the
largest heavy count relative to heavy = 0), the CPU split between services and their waiting
vs running time (measured inside the middleware, from /stats.json).

Usage: bench/degradation.py [--duration 5] [--heavy 0,10,20,40] [--policies threads,fair,priority,admission]
Needs wrk (installed with apt-get if missing). Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import signal
import subprocess
import time
import urllib.request

from serve_vs_nginx import ROOT, webscope_binary, ensure_tools, free_port, wait_port

POLICY_FLAGS = {
    "threads": [],
    "fair": ["--weight", "light=8,middle=2,heavy=1"],
    "priority": ["--priority", "light,middle,heavy"],
    "admission": ["--limit", "heavy=2", "--target", "5ms"],
}


# wrk ignores Retry-After; without this, a refused client asks again at once and the flood of
# 503s (100 000/s) measures wrk, not the policy. After a 503 the connection waits 1 s.
RETRY_AFTER = """
local wait = 0
response = function(status, headers, body)
  if status == 503 then wait = 1000 else wait = 0 end
end
delay = function()
  local d = wait
  wait = 0
  return d
end
"""


def wrk(port, path, clients, duration):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".retry-after.lua")
    with open(script, "w") as f:
        f.write(RETRY_AFTER)
    cmd = ["wrk", "-t1", f"-c{clients}", f"-d{duration}s", "--timeout", "60s", "-s", script,
           f"http://127.0.0.1:{port}{path}"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def parse_wrk(out):
    total, errors, elapsed = 0, 0, None
    for line in out.splitlines():
        if "requests in" in line:
            total = int(line.split()[0])
            elapsed = float(line.split("in")[1].split("s,")[0])
        if "Non-2xx" in line:
            errors = int(line.split(":")[1])
    ok = total - errors
    return ok / elapsed if elapsed else 0.0, errors / elapsed if elapsed else 0.0


def stats(admin):
    with urllib.request.urlopen(f"http://{admin}/stats.json", timeout=10) as r:
        return json.load(r)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--light", type=int, default=30)
    parser.add_argument("--heavy", default="0,10,20,40")
    parser.add_argument("--policies", default="threads,fair,priority,admission")
    parser.add_argument("--binary", default=None)
    args = parser.parse_args()
    ensure_tools()
    binary = webscope_binary(args.binary)
    heavies = [int(h) for h in args.heavy.split(",")]
    print(f"set 1: {args.light} light clients, heavy clients {heavies}, {args.duration} s each, closed loop (wrk)")
    summary = []
    for policy in args.policies.split(","):
        print(f"\npolicy {policy} {' '.join(POLICY_FLAGS[policy])}")
        print(f"  {'heavy':>5} {'light req/s':>12} {'heavy req/s':>12} {'heavy 503/s':>12} "
              f"{'light CPU %':>11} {'light wait/run ms':>18} {'heavy wait/run ms':>18}")
        light0 = None
        last = None
        for heavy in heavies:
            port, admin_port = free_port(), free_port()
            while admin_port == port:
                admin_port = free_port()
            server = subprocess.Popen(
                [binary, "serve", "--root", ROOT, "--listen", f"127.0.0.1:{port}", "--admin",
                 f"127.0.0.1:{admin_port}", "--services", "--policy", policy, *POLICY_FLAGS[policy]],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_port(port)
                wait_port(admin_port)
                before = stats(f"127.0.0.1:{admin_port}")
                runs = [wrk(port, "/svc/light", args.light, args.duration)]
                if heavy:
                    runs.append(wrk(port, "/svc/heavy", heavy, args.duration))
                outs = [r.communicate()[0] for r in runs]
                after = stats(f"127.0.0.1:{admin_port}")
            finally:
                server.send_signal(signal.SIGKILL)
                server.wait()
            light_rps, _ = parse_wrk(outs[0])
            heavy_rps, heavy_refused = parse_wrk(outs[1]) if heavy else (0.0, 0.0)
            svc = lambda s, name: s["services"][name]
            cpu = {n: svc(after, n)["cpu_s"] - svc(before, n)["cpu_s"] for n in ("light", "heavy")}
            share = 100 * cpu["light"] / max(cpu["light"] + cpu["heavy"], 1e-9)
            wr = lambda n: f"{svc(after, n)['wait_us']['mean'] / 1000:7.1f}/{svc(after, n)['running_us']['mean'] / 1000:<7.1f}"
            print(f"  {heavy:5} {light_rps:12.0f} {heavy_rps:12.1f} {heavy_refused:12.1f} {share:10.0f}% "
                  f"{wr('light'):>18} {wr('heavy') if heavy else '-':>18}")
            if heavy == 0:
                light0 = light_rps
            last = (heavy, light_rps, heavy_rps)
        if light0 and last:
            summary.append((policy, last[0], 100 * last[1] / light0, last[2]))
    print("\ndegradation of the light service (throughput at the largest heavy count / at heavy = 0)")
    for policy, heavy, kept, heavy_rps in summary:
        print(f"  {policy:10} heavy={heavy}: light keeps {kept:5.1f} %, heavy {heavy_rps:.1f} req/s")


if __name__ == "__main__":
    main()
