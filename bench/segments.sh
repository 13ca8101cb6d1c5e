#!/usr/bin/env bash
# One run from 1, 2 and 3 generator hosts: network namespaces on a bridge (a server host,
# three generator hosts, veth pairs, addresses of their own), webscope serve pinned to CPU 0
# with one worker, every generator pinned to CPU 1 (so the segments share one core: the
# merged figures show what splitting a run costs, not what more cores buy), keep-alive,
# the same total connections. Prints per run the merged responses/s, p50 and p99, and the
# generators' CPU per response. Then the merge's own cost on 3 × DURATION-long segments.
#
# Usage (root): bench/segments.sh [--connections 30] [--duration 10s] [--rounds 2] [--rate R]
# --rate R: open loop at R requests/s in all (R/N per segment) instead of closed loop, so that
# the merged latency can be set against one process's at the same load.
# Everything it makes (namespaces, server, generators) is removed when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
connections=30 duration=10s rounds=2 rate=
while [ $# -gt 0 ]; do
    case "$1" in
        --connections) connections=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        *) echo "usage: $0 [--connections N] [--duration D] [--rounds R] [--rate R]" >&2; exit 2 ;;
    esac
done
cargo build --release -q -p webscope
exe=$PWD/${CARGO_TARGET_DIR:-target}/release/webscope
work=$(mktemp -d)
id=$$
S=wsb$id
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    for n in $S wsbg0$id wsbg1$id wsbg2$id; do ip netns del "$n" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
ip netns add $S
ip -n $S link set lo up
ip -n $S link add br0 type bridge
ip -n $S addr add 10.201.0.1/24 dev br0
ip -n $S link set br0 up
for i in 0 1 2; do
    G=wsbg${i}$id
    ip netns add "$G"
    ip link add v$i-s netns $S type veth peer name v$i-g netns "$G"
    ip -n $S link set v$i-s master br0 up
    ip -n "$G" addr add 10.201.0.1$i/24 dev v$i-g
    ip -n "$G" link set v$i-g up
    ip -n "$G" link set lo up
done
mkdir -p "$work/root"
head -c 1024 /dev/zero > "$work/root/index.html"
ip netns exec $S taskset -c 0 "$exe" serve --root "$work/root" --listen 10.201.0.1:18080 \
    --workers 1 --access-log off >/dev/null 2>&1 &
server=$!
for _ in $(seq 100); do
    ip netns exec wsbg0$id bash -c 'exec 3<>/dev/tcp/10.201.0.1/18080' 2>/dev/null && break
    sleep 0.05
done

# run N OUT: the run split in N segments, one per generator host, merged into OUT.
run() {
    local n=$1 out=$2 pids="" files=""
    local start=$(( $(date +%s) + 2 ))
    for ((i = 0; i < n; i++)); do
        ip netns exec wsbg${i}$id taskset -c 1 "$exe" load http://10.201.0.1:18080/index.html \
            -c "$connections" -t 1 -d "$duration" -q --segment $i/$n --start-at $start \
            ${rate:+--rate "$rate"} \
            --json "$out.s$i.json" --hlog "$out.s$i.hlog" >/dev/null &
        pids="$pids $!"
        files="$files $out.s$i.json"
    done
    for p in $pids; do wait "$p"; done
    # shellcheck disable=SC2086
    "$exe" merge "$out" $files >/dev/null
}

printf '%-10s %6s %12s %9s %9s %16s\n' generators round "responses/s" "p50 µs" "p99 µs" "gen CPU µs/resp"
for ((r = 1; r <= rounds; r++)); do
    for n in 1 2 3; do
        run $n "$work/r$r-n$n"
        python3 - "$work/r$r-n$n/load.json" "$n" "$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<10} {sys.argv[3]:>6} {d['requests_per_s']:>12.0f} {d['latency_us']['p50']:>9.1f} "
      f"{d['latency_us']['p99']:>9.1f} {d['generator_cpu_per_request_us']:>16.2f}")
PY
    done
done

# The merge's cost: wall time and peak memory of merging the last 3-segment run.
last="$work/r$rounds-n3"
/usr/bin/time -f "merge of 3 segments of $duration (1-s intervals): %e s wall, %M KiB peak RSS" \
    "$exe" merge "$work/merge-cost" "$last".s0.json "$last".s1.json "$last".s2.json >/dev/null
