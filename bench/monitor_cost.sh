#!/usr/bin/env bash
# What `webscope monitor` costs, on this machine, with many sockets on the watched port.
#
# 1. Counting one port's TCP states: netlink sock_diag against parsing /proc/net/tcp{,6}
#    (and against merely reading it), at 1 000, 10 000 and 30 000 sockets on the port, most
#    in TIME_WAIT (the server closes first, as an HTTP/1.0 server does), 400 ESTABLISHED;
#    also the bare table walk (a port with no socket) and the accept-queue read alone.
#    Methods alternate within each repetition; medians of the CPU time of the calling thread
#    (user + kernel) and ratios to sock_diag are printed.
# 2. The whole monitor sampling every 100 ms with the largest count on the port: with the
#    default budget for the per-port walks, with a walk at every sample, and without --port,
#    alternated A B C A B C; its own CPU time in percent of one core.
#
# Usage: bench/monitor_cost.sh [--sockets 1000,10000,30000] [--reps 15] [--monitor-seconds 5]
# Everything is on loopback (127.0.0.1 to 127.0.0.33) inside one process; TIME_WAIT sockets
# end by themselves 60 s later. Run as root or with `ulimit -n` above 1 000.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p webscope-monitor --example monitor_cost
exec "${CARGO_TARGET_DIR:-target}/release/examples/monitor_cost" "$@"
