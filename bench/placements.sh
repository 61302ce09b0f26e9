#!/usr/bin/env bash
# Placement scheduling latency on one machine, all on loopback: a 3-node hub
# and AGENTS embedded agents (MemberClusters labelled region=east|west|central
# round-robin, different sizes), then `fleet-bench placement-latency`: COUNT
# ClusterResourcePlacements (PickN CLUSTERS, sorted by available CPU, spread
# over region), one at a time, each timed from the Apply reply to its
# Scheduled condition for that generation.
#
#   bench/placements.sh                        # 6 agents, 50 placements of 3 clusters
#   AGENTS=9 COUNT=100 CLUSTERS=3 bench/placements.sh
#   BENCH_SKIP_BUILD=1 bench/placements.sh     # reuse the release binaries
#
# Everything it starts is stopped, and its temp dir removed, on exit
# (BENCH_KEEP=1 keeps the temp dir with the node and agent logs).
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTS=${AGENTS:-6}
COUNT=${COUNT:-50}
CLUSTERS=${CLUSTERS:-3}
START_TIMEOUT=${START_TIMEOUT:-120}   # seconds for the hub, and for the agents, to come up
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release
[ "${BENCH_SKIP_BUILD:-0}" = 1 ] || cargo build --release -q --bins
for tool in jq python3; do command -v $tool >/dev/null || { apt-get update -qq && apt-get install -y -qq $tool >/dev/null; }; done
for b in fleet-node fleet-agent fleetctl fleet-bench; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build with cargo build --release --bins)" >&2; exit 1; }
done

TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/fleet-placements.XXXXXX")
PIDS=()
cleanup() {
  status=$?
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${BENCH_KEEP:-0}" = 1 ] || [ "$status" != 0 ]; then
    [ "$status" = 0 ] || { echo "failed (exit $status); last log lines:" >&2; tail -n 5 "$TMP"/*.log >&2 2>/dev/null || true; }
    [ "${BENCH_KEEP:-0}" = 1 ] && echo "logs kept in $TMP" >&2
  fi
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for SECONDS WHAT CMD...: polls CMD every 0.2 s; fails after SECONDS.
wait_for() {
  local limit=$1 what=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then echo "timed out after ${limit}s waiting for $what" >&2; return 1; fi
    sleep 0.2
  done
}

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P=($(port) $(port) $(port))
PEERS="1=127.0.0.1:${P[0]},2=127.0.0.1:${P[1]},3=127.0.0.1:${P[2]}"
export FLEET_ENDPOINTS="127.0.0.1:${P[0]},127.0.0.1:${P[1]},127.0.0.1:${P[2]}" FLEET_TLS_DIR=$TMP/pki
"$BIN/fleetctl" pki init --dir "$TMP/pki" --nodes 3 >/dev/null
for i in 1 2 3; do
  "$BIN/fleet-node" --id $i --listen "127.0.0.1:${P[$((i-1))]}" --data-dir "$TMP/node-$i" --tls-dir "$TMP/pki" \
    --peers "$PEERS" --init 2>"$TMP/node-$i.log" &
  PIDS+=($!)
done
has_leader() { "$BIN/fleetctl" cluster status -o json | jq -e '.leader != null'; }
wait_for "$START_TIMEOUT" "a hub leader" has_leader

REGIONS=(east west central)
echo "starting $AGENTS agents (regions ${REGIONS[*]} round-robin; member i has i+1 nodes of 4 CPUs)..."
{
  for n in $(seq 0 $((AGENTS-1))); do
    printf -- '---\napiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata: {name: m-%d, labels: {bench: "true", region: %s}}\nspec: {heartbeatPeriodSeconds: 10}\n' \
      "$n" "${REGIONS[$((n % 3))]}"
  done
} | "$BIN/fleetctl" apply -f - >/dev/null
for n in $(seq 0 $((AGENTS-1))); do
  { read -r token; read -r fp; } < <("$BIN/fleetctl" token create --cluster "m-$n" --ttl 10m 2>/dev/null)
  RUST_LOG=warn "$BIN/fleet-agent" --cluster "m-$n" --hub "$FLEET_ENDPOINTS" --data-dir "$TMP/agent-$n" \
    --token "$token" --ca-fingerprint "$fp" --sim-ready-delay 0s \
    --sim-nodes $((n + 1)) --sim-capacity cpu=4,memory=16Gi --sim-allocatable cpu=4,memory=16Gi \
    2>"$TMP/agent-$n.log" &
  PIDS+=($!)
done
ready() {
  local n
  n=$("$BIN/fleetctl" get mc -o json | jq '[.items[] | select(
      (.status.conditions // [] | any(.type=="Joined" and .status=="True")) and
      (.status.conditions // [] | any(.type=="Healthy" and .status=="True")) and
      (.status.resourceUsage.available.cpu != null))] | length')
  [ "$n" -ge "$AGENTS" ]
}
wait_for "$START_TIMEOUT" "$AGENTS agents Joined+Healthy with properties" ready
echo "all $AGENTS agents joined and healthy"
"$BIN/fleetctl" get mc -o json | jq -r '.items[] | "  \(.metadata.name)  region=\(.metadata.labels.region)  available cpu=\(.status.resourceUsage.available.cpu)"'
leader=$("$BIN/fleetctl" cluster status -o json | jq -r '.leader')
echo "hub leader: node $leader; fleet-bench talks to ${FLEET_ENDPOINTS%%,*} (node 1)"

echo "ClusterResourcePlacement Apply reply -> Scheduled, $COUNT placements (PickN $CLUSTERS, sorter + region spread):"
"$BIN/fleet-bench" placement-latency --endpoints "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" \
  --count "$COUNT" --clusters "$CLUSTERS"
