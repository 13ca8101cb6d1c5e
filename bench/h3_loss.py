#!/usr/bin/env python3
"""HTTP/3 against HTTP/2 under packet loss (#50 §3, the loss experiment, as a bench).

In a network namespace of its own (loopback only), `webscope serve --tls-cert --http3` (one
worker, CPU 0) serves a file; `webscope load` (CPU 1) fetches it over HTTP/2 (TCP) and over
HTTP/3 (QUIC), closed loop, keep-alive, -c connections of -M streams, while nftables drops a
share of the packets the server sends (this kernel has no netem; the rule is the one
crates/monitor/tests/kernel.rs uses: `numgen random` on the input hook). Loopback's MTU is set
to 1500 and its GSO to one segment, so that a dropped packet is one segment of TCP or one QUIC
datagram, as on a network.

What it prints per loss rate and protocol (the median of --runs alternated runs): goodput
(response bytes per second), requests per second, p50 and p99 latency, the load's errors.

Read with care: loopback has no delay (RTT some 50 us), so a loss costs what each transport's
timers cost: Linux TCP's retransmission timeout is at least 200 ms (RTO_MIN) when fast
retransmit cannot repair a loss (a tail loss, a lost retransmission), while QUIC's probe
timeout is a few RTTs (quinn: at least 1 ms). Head-of-line blocking is the other difference:
over HTTP/2 every stream of a connection waits behind a lost TCP segment; over HTTP/3 only the
stream whose data was lost does.

Usage: bench/h3_loss.py [--binary PATH] [--loss 0,1,2] [--runs 3] [--duration 5s]
                        [--size 102400] [-c 4] [-M 8] [--gso]
Needs: root (a network namespace: unshare -n), ip, nft (Debian: iproute2, nftables), openssl,
taskset.
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
from serve_vs_nginx import free_port, wait_port, webscope_binary  # noqa: E402
from serve_tls_vs_nginx import certificate  # noqa: E402

IN_NS = "WEBSCOPE_H3_LOSS_IN_NETNS"


def sh(*cmd, stdin=None):
    subprocess.run(cmd, check=True, input=stdin, text=True, capture_output=True)


def lose(port, per_mille):
    """Drops `per_mille` / 1000 of the packets the server at `port` sends (TCP and UDP)."""
    subprocess.run(["nft", "delete", "table", "inet", "loss"], capture_output=True)
    if per_mille == 0:
        return
    rules = (
        "table inet loss {\n chain lose {\n  type filter hook input priority 0;\n"
        f"  tcp sport {port} numgen random mod 1000 < {per_mille} drop\n"
        f"  udp sport {port} numgen random mod 1000 < {per_mille} drop\n }}\n}}\n"
    )
    sh("nft", "-f", "-", stdin=rules)


def run_load(binary, port, protocol, args, work):
    out = os.path.join(work, "r.json")
    cmd = ["taskset", "-c", "1", binary, "load", f"https://127.0.0.1:{port}/file.bin", protocol,
           "-c", str(args.connections), "-M", str(args.streams), "-t", "1", "-d", args.duration,
           "--cacert", os.path.join(work, "cert.pem"), "--timeout", "10s", "--json", out]
    subprocess.run(cmd, capture_output=True)
    with open(out) as f:
        r = json.load(f)
    seconds = r["duration_s"] if "duration_s" in r else float(args.duration.rstrip("s"))
    total = r["latency_us"] if "latency_us" in r else r["total"]["latency_us"]
    return {
        "goodput_mbit": r["bytes"] * 8 / seconds / 1e6 if "bytes" in r else None,
        "rps": r["requests"] / seconds,
        "p50_ms": total["p50"] / 1000,
        "p99_ms": total["p99"] / 1000,
        "errors": r["errors"]["total"],
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary")
    p.add_argument("--loss", default="0,1,2", help="loss rates in per cent, e.g. 0,1,2")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--duration", default="5s")
    p.add_argument("--size", type=int, default=100 * 1024, help="the file's bytes")
    p.add_argument("-c", "--connections", type=int, default=4)
    p.add_argument("-M", "--streams", type=int, default=8)
    p.add_argument("--gso", action="store_true",
                   help="keep loopback's GSO: a drop then takes a whole GSO burst (up to 64 KiB of "
                        "TCP, several QUIC datagrams), not one packet")
    args = p.parse_args()
    binary = os.path.abspath(webscope_binary(args.binary))
    if os.environ.get(IN_NS) is None:
        # Into a network namespace of our own: the rules and the MTU touch nothing outside.
        env = dict(os.environ, **{IN_NS: "1"})
        argv = [a for a in sys.argv[1:]]
        if not args.binary:
            argv += ["--binary", binary]
        os.execvpe("unshare", ["unshare", "-n", sys.executable, os.path.abspath(__file__), *argv], env)
    if args.gso:
        sh("ip", "link", "set", "lo", "up", "mtu", "1500")
    else:
        sh("ip", "link", "set", "lo", "up", "mtu", "1500", "gso_max_segs", "1")
    with tempfile.TemporaryDirectory() as work:
        root = os.path.join(work, "root")
        os.mkdir(root)
        with open(os.path.join(root, "file.bin"), "wb") as f:
            f.write(os.urandom(args.size))
        cert, key = certificate(work)
        port = free_port()
        server = subprocess.Popen(
            ["taskset", "-c", "0", binary, "serve", "--root", root, "--listen", f"127.0.0.1:{port}",
             "--workers", "1", "--access-log", "off", "--tls-cert", cert, "--tls-key", key, "--http3"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, limit=20.0)
            rows = {}
            for loss in [float(x) for x in args.loss.split(",")]:
                lose(port, round(loss * 10))
                for _ in range(args.runs):
                    for protocol in ["--http2", "--http3"]:
                        r = run_load(binary, port, protocol, args, work)
                        rows.setdefault((loss, protocol), []).append(r)
                        print(f"loss {loss:g}% {protocol[2:]}: {r}", file=sys.stderr)
                        time.sleep(0.5)
            lose(port, 0)
        finally:
            server.terminate()
            server.wait(timeout=15)
    print(f"{args.size} B file, -c {args.connections} -M {args.streams}, {args.duration} runs, "
          f"median of {args.runs} (alternated), loopback MTU 1500, "
          f"{'GSO kept (bursts dropped)' if args.gso else 'one segment per packet'}")
    print(f"{'loss':>5} {'protocol':>8} {'goodput Mbit/s':>15} {'req/s':>8} {'p50 ms':>8} "
          f"{'p99 ms':>8} {'errors':>7}")
    for (loss, protocol), runs in rows.items():
        med = {k: statistics.median(r[k] for r in runs if r[k] is not None) for k in runs[0]
               if runs[0][k] is not None}
        print(f"{loss:>4g}% {protocol[2:]:>8} {med.get('goodput_mbit', float('nan')):>15.1f} "
              f"{med['rps']:>8.0f} {med['p50_ms']:>8.2f} {med['p99_ms']:>8.2f} {med['errors']:>7.0f}")


if __name__ == "__main__":
    main()
