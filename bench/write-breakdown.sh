#!/usr/bin/env bash
# Where the time of one write goes: a 3-node hub (default flags, fsyncing,
# mutual TLS) and `fleet-bench breakdown`, which writes one 1 KiB ConfigMap
# at a time through the leader and then through a follower, and prints each
# node's per-stage timings (fleet_write_stage_seconds, read from /metrics
# before and after) as two tables, with the client's mean latency.
#
#   bench/write-breakdown.sh                   # 2,000 writes through each
#   WRITES=5000 bench/write-breakdown.sh
#
# Uses the release binaries (built unless BENCH_SKIP_BUILD=1). BENCH_TMP
# puts the data on the disk to measure (default /tmp).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/fleet.sh"
cd "$here/.."
WRITES=${WRITES:-2000}
VALUE_SIZE=${VALUE_SIZE:-1024}
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release
[ "${BENCH_SKIP_BUILD:-0}" = 1 ] || cargo build --release -q -p fleet-node -p fleetctl -p fleet-bench
for b in fleet-node fleetctl fleet-bench; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build it, or unset BENCH_SKIP_BUILD)" >&2; exit 1; }
done
fleet_tmp write-breakdown

P=($(fleet_port) $(fleet_port) $(fleet_port))
H=($(fleet_port) $(fleet_port) $(fleet_port))
PEERS="1=127.0.0.1:${P[0]},2=127.0.0.1:${P[1]},3=127.0.0.1:${P[2]}"
ENDPOINTS="127.0.0.1:${P[0]},127.0.0.1:${P[1]},127.0.0.1:${P[2]}"
METRICS="127.0.0.1:${H[0]},127.0.0.1:${H[1]},127.0.0.1:${H[2]}"
"$BIN/fleetctl" pki init --dir "$TMP/pki" --nodes 3 --hosts 127.0.0.1,localhost >/dev/null
for i in 1 2 3; do
  RUST_LOG=warn "$BIN/fleet-node" --id $i --listen "127.0.0.1:${P[$((i-1))]}" --data-dir "$TMP/node-$i" \
    --http-listen "127.0.0.1:${H[$((i-1))]}" --tls-dir "$TMP/pki" --peers "$PEERS" --init 2>"$TMP/node-$i.log" &
  PIDS+=($!)
done
probe() { "$BIN/fleet-bench" probe --target fleet --endpoints "$ENDPOINTS" --tls-dir "$TMP/pki" --request-timeout-seconds 2 >/dev/null 2>&1; }
wait_for 60 "every node taking writes" probe
FSTYPE=$(df -PT "$TMP" | awk 'NR==2 {print $2}')
echo "3-node hub on 127.0.0.1, data on $FSTYPE, ${VALUE_SIZE}-byte ConfigMaps; each cell: the stage's mean on that node in µs [times per write]"
"$BIN/fleet-bench" breakdown --endpoints "$ENDPOINTS" --metrics "$METRICS" --tls-dir "$TMP/pki" \
  --writes "$WRITES" --value-size "$VALUE_SIZE"
