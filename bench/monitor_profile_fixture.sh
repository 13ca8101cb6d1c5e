#!/usr/bin/env bash
# Records the kind of perf profile the --profile classifier's test fixtures were cut from
# (crates/monitor/tests/data/perf_script.txt): webscope serve under `webscope load --close`
# on loopback, with IPv6 and UDP traffic, direct and fsync'd disk writes, a directory walk
# and tmpfs writes beside it, so that every non-synthetic rule of
# crates/monitor/src/profile/rules.rs has samples to decide.
#
# Usage: bench/monitor_profile_fixture.sh OUTDIR     (needs perf and root; about 15 s)
# Writes OUTDIR/perf.data, OUTDIR/perf_script.txt and OUTDIR/server.pid.
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
cargo build --release -q -p webscope
bin=${CARGO_TARGET_DIR:-target}/release/webscope
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work" /dev/shm/monitor-fixture.bin' EXIT
"$bin" fileset webstone-a --out "$work/files" >/dev/null
"$bin" serve --root "$work/files" --listen 127.0.0.1:0 --workers 1 >"$work/serve.out" 2>&1 &
server=$!
echo "$server" >"$out/server.pid"
sleep 1
port=$(grep -o '127.0.0.1:[0-9]*' "$work/serve.out" | head -1 | cut -d: -f2)
python3 - <<'PY' &
import socket, time, os
end = time.time() + 8
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
lst = socket.socket(socket.AF_INET6); lst.bind(('::1', 0)); lst.listen(64)
port6 = lst.getsockname()[1]
with open('/tmp/monitor-fixture-fsync', 'wb') as f:
    while time.time() < end:
        udp.sendto(b'x' * 100, ('127.0.0.1', 9))
        c = socket.create_connection(('::1', port6)); s, _ = lst.accept(); s.close(); c.close()
        f.write(b'y' * 512); f.flush(); os.fsync(f.fileno())
os.unlink('/tmp/monitor-fixture-fsync')
PY
(for _ in 1 2 3; do
    dd if=/dev/zero of="$work/dd.bin" bs=1M count=32 oflag=direct conv=fsync 2>/dev/null
    find /usr/lib -name '*.so' >/dev/null
    dd if=/dev/zero of=/dev/shm/monitor-fixture.bin bs=1M count=64 2>/dev/null
    sleep 1
done) &
(sleep 1; "$bin" monitor --port "$port" -d 3s -q >/dev/null) &
perf record -e cpu-clock -F 1999 -a -g -q -o "$out/perf.data" -- \
    "$bin" load --fileset "$work/files" --base "http://127.0.0.1:$port/" -c 8 -d 6s --close -q >/dev/null
wait $(jobs -p | grep -v "^$server\$") 2>/dev/null || true
kill "$server"
perf script -i "$out/perf.data" -F comm,pid,tid,ip,sym,dso --no-inline 2>/dev/null >"$out/perf_script.txt"
echo "recorded $(grep -c '^[^[:space:]]' "$out/perf_script.txt") samples into $out (server pid $server)"
