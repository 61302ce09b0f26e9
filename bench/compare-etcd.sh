#!/usr/bin/env bash
# Write throughput of a 3-node Fleet hub against a 3-member etcd, both on
# loopback, both on the same disk, both fsyncing every commit (neither gets
# an unsafe flag). Prints one markdown table with hub/etcd ratios.
#
#   bench/compare-etcd.sh                      # 1, 64 and 256 clients, 1 KiB, 10 s each
#   BENCH_SECONDS=30 BENCH_CLIENTS="1 16 256" bench/compare-etcd.sh
#
# Knobs (environment): BENCH_SECONDS (10), BENCH_WARMUP (2), BENCH_CLIENTS
# ("1 64 256"), BENCH_VALUE_SIZE (1024), BENCH_TMP (parent of the temp dir,
# default $TMPDIR or /tmp: put it on the disk you want to measure),
# BENCH_RESULTS (keep each run's JSON there), BENCH_SKIP_BUILD=1 (reuse
# binaries), BENCH_KEEP=1 (keep the temp dir), CARGO_TARGET_DIR, and for
# experiments BENCH_HUB_FLAGS / BENCH_ETCD_FLAGS (extra server flags; the
# published table uses none: both systems run with their defaults).
# BENCH_ETCD_TLS=1 runs etcd with mutual TLS on its client and peer ports
# (certificates from the hub's PKI), so both systems pay for encryption; by
# default etcd runs plaintext (its own default), while
# the hub always uses mutual TLS.
# Ports: etcd 23791-23793 (clients) and 23801-23803 (peers), hub 27101-27103;
# override with ETCD_CLIENT_BASE, ETCD_PEER_BASE, HUB_BASE.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_PER_RUN=${BENCH_SECONDS:-10}
WARMUP=${BENCH_WARMUP:-2}
CLIENTS=${BENCH_CLIENTS:-"1 64 256"}
VALUE_SIZE=${BENCH_VALUE_SIZE:-1024}
ETCD_CLIENT_BASE=${ETCD_CLIENT_BASE:-23790}
ETCD_PEER_BASE=${ETCD_PEER_BASE:-23800}
HUB_BASE=${HUB_BASE:-27100}
READY_TIMEOUT=60

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    die "need root (or sudo) to run: $*"
  fi
}

# --- tools: etcd from Debian (package etcd-server), jq for the JSON reports.
missing=()
command -v etcd >/dev/null || missing+=(etcd-server)
command -v jq >/dev/null || missing+=(jq)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} with apt"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi
ETCD_VERSION=$(etcd --version | sed -n 's/^etcd Version: //p')
log "etcd $ETCD_VERSION ($(command -v etcd))"

# --- binaries.
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
  log "building fleet-node, fleetctl and fleet-bench (release)"
  (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR cargo build --release -q -p fleet-node -p fleetctl -p fleet-bench)
fi
BIN=$TARGET_DIR/release
for b in fleet-node fleetctl fleet-bench; do
  [ -x "$BIN/$b" ] || die "$BIN/$b not found (build it, or unset BENCH_SKIP_BUILD)"
done

# --- a temp dir for both systems (same disk), removed on exit with everything we started.
DIR=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/fleet-bench.XXXXXX")
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "${BENCH_KEEP:-0}" = 1 ]; then log "kept $DIR"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
FSTYPE=$(df -PT "$DIR" | awk 'NR==2 {print $2}')
DEVICE=$(df -PT "$DIR" | awk 'NR==2 {print $1}')
[ "$FSTYPE" = tmpfs ] && log "warning: $DIR is on tmpfs: fsync costs nothing there; set BENCH_TMP to a real disk"
log "data in $DIR ($FSTYPE on $DEVICE)"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for i in 1 2 3; do
  for p in $((ETCD_CLIENT_BASE + i)) $((ETCD_PEER_BASE + i)) $((HUB_BASE + i)); do
    port_free "$p" || die "port $p on 127.0.0.1 is in use (set ETCD_CLIENT_BASE, ETCD_PEER_BASE or HUB_BASE)"
  done
done

# --- one PKI: the hub's certificates, and etcd's with BENCH_ETCD_TLS=1.
"$BIN/fleetctl" pki init --dir "$DIR/pki" --nodes 3 --hosts 127.0.0.1,localhost >/dev/null

# --- etcd: three members, default durability (fsync of the WAL on every commit).
ETCD_SCHEME=http ETCD_TLS_FLAGS=() BENCH_ETCD_CLIENT_FLAGS=()
if [ "${BENCH_ETCD_TLS:-0}" = 1 ]; then ETCD_SCHEME=https BENCH_ETCD_CLIENT_FLAGS=(--etcd-tls); fi
ETCD_CLUSTER=e1=$ETCD_SCHEME://127.0.0.1:$((ETCD_PEER_BASE + 1)),e2=$ETCD_SCHEME://127.0.0.1:$((ETCD_PEER_BASE + 2)),e3=$ETCD_SCHEME://127.0.0.1:$((ETCD_PEER_BASE + 3))
ETCD_ENDPOINTS=127.0.0.1:$((ETCD_CLIENT_BASE + 1)),127.0.0.1:$((ETCD_CLIENT_BASE + 2)),127.0.0.1:$((ETCD_CLIENT_BASE + 3))
for i in 1 2 3; do
  client=$ETCD_SCHEME://127.0.0.1:$((ETCD_CLIENT_BASE + i))
  peer=$ETCD_SCHEME://127.0.0.1:$((ETCD_PEER_BASE + i))
  if [ "$ETCD_SCHEME" = https ]; then
    ETCD_TLS_FLAGS=(--cert-file "$DIR/pki/node-$i.pem" --key-file "$DIR/pki/node-$i-key.pem"
      --trusted-ca-file "$DIR/pki/ca.pem" --client-cert-auth
      --peer-cert-file "$DIR/pki/node-$i.pem" --peer-key-file "$DIR/pki/node-$i-key.pem"
      --peer-trusted-ca-file "$DIR/pki/ca.pem" --peer-client-cert-auth)
  fi
  env -u ETCD_DATA_DIR -u ETCD_NAME etcd --name "e$i" --data-dir "$DIR/etcd-$i" \
    --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "$ETCD_CLUSTER" --initial-cluster-state new --initial-cluster-token fleet-bench \
    --logger zap --log-outputs stderr --log-level warn "${ETCD_TLS_FLAGS[@]}" ${BENCH_ETCD_FLAGS:-} \
    >"$DIR/etcd-$i.log" 2>&1 &
  PIDS+=($!)
done

# --- Fleet hub: three nodes, default timing and durability.
HUB_PEERS=1=127.0.0.1:$((HUB_BASE + 1)),2=127.0.0.1:$((HUB_BASE + 2)),3=127.0.0.1:$((HUB_BASE + 3))
HUB_ENDPOINTS=127.0.0.1:$((HUB_BASE + 1)),127.0.0.1:$((HUB_BASE + 2)),127.0.0.1:$((HUB_BASE + 3))
for i in 1 2 3; do
  RUST_LOG=warn "$BIN/fleet-node" --id "$i" --listen "127.0.0.1:$((HUB_BASE + i))" --data-dir "$DIR/node-$i" \
    --tls-dir "$DIR/pki" --peers "$HUB_PEERS" --init ${BENCH_HUB_FLAGS:-} >"$DIR/node-$i.log" 2>&1 &
  PIDS+=($!)
done

# --- ready = one write goes through every member of both systems.
check_alive() {
  local pid
  for pid in "${PIDS[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$DIR"/*.log >&2 || true
      die "a server process ($pid) exited; logs above"
    fi
  done
}
tls_flags() { # target
  if [ "$1" = etcd ]; then echo "${BENCH_ETCD_CLIENT_FLAGS[@]}"; fi
}
wait_ready() { # target endpoints
  local deadline=$((SECONDS + READY_TIMEOUT)) err
  # shellcheck disable=SC2046 # tls_flags prints zero or one flag
  until err=$("$BIN/fleet-bench" probe --target "$1" --endpoints "$2" --tls-dir "$DIR/pki" $(tls_flags "$1") \
    --request-timeout-seconds 2 2>&1 >/dev/null); do
    check_alive
    [ $SECONDS -lt $deadline ] || die "$1 not ready after ${READY_TIMEOUT}s: $err"
    sleep 0.2
  done
  log "$1 ready"
}
wait_ready etcd "$ETCD_ENDPOINTS"
wait_ready fleet "$HUB_ENDPOINTS"

# --- the runs, interleaved so both systems see the same machine state.
run() { # target endpoints clients
  local out="$DIR/result-$1-$3.json"
  # Start from a clean disk: the other system's last run leaves hundreds of
  # MB of dirty pages whose writeback would otherwise slow this run's fsyncs.
  sync
  # shellcheck disable=SC2046
  "$BIN/fleet-bench" put --target "$1" --endpoints "$2" --tls-dir "$DIR/pki" $(tls_flags "$1") --clients "$3" \
    --seconds "$SECONDS_PER_RUN" --warmup-seconds "$WARMUP" --value-size "$VALUE_SIZE" -o json >"$out"
  log "$(jq -r '"\(.target) \(.clients) clients: \(.ops_per_sec) writes/s, p50 \(.p50_ms) ms, p99 \(.p99_ms) ms, errors \(.errors)"' "$out")"
  check_alive
}
for c in $CLIENTS; do
  run etcd "$ETCD_ENDPOINTS" "$c"
  run fleet "$HUB_ENDPOINTS" "$c"
done
if [ -n "${BENCH_RESULTS:-}" ]; then
  mkdir -p "$BENCH_RESULTS" && cp "$DIR"/result-*.json "$BENCH_RESULTS"/
fi

# --- one table.
get() { jq -r ".$3" "$DIR/result-$1-$2.json"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
echo
ETCD_TRANSPORT="etcd plaintext"
[ "$ETCD_SCHEME" = https ] && ETCD_TRANSPORT="etcd over mutual TLS"
echo "3-member etcd $ETCD_VERSION vs 3-node Fleet hub on 127.0.0.1, ${VALUE_SIZE}-byte values, ${SECONDS_PER_RUN} s per run" \
  "(after ${WARMUP} s warmup), both fsyncing, data on $FSTYPE ($DEVICE); $ETCD_TRANSPORT, hub over mutual TLS" \
  "(client and peer traffic); latencies in ms."
echo
echo "| clients | etcd ops/s | etcd p50 | etcd p99 | hub ops/s | hub p50 | hub p99 | throughput ratio hub/etcd | p99 ratio hub/etcd |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
errors=""
for c in $CLIENTS; do
  eo=$(get etcd "$c" ops_per_sec) e50=$(get etcd "$c" p50_ms) e99=$(get etcd "$c" p99_ms)
  ho=$(get fleet "$c" ops_per_sec) h50=$(get fleet "$c" p50_ms) h99=$(get fleet "$c" p99_ms)
  printf '| %s | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f | %s | %s |\n' \
    "$c" "$eo" "$e50" "$e99" "$ho" "$h50" "$h99" "$(ratio "$ho" "$eo")" "$(ratio "$h99" "$e99")"
  for t in etcd fleet; do
    n=$(get "$t" "$c" errors)
    [ "$n" = 0 ] || errors="$errors $t/$c clients: $n errors ($(get "$t" "$c" first_error));"
  done
done
[ -z "$errors" ] || printf '\nErrors (retried):%s\n' "$errors"
