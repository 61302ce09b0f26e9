#!/usr/bin/env bash
# Rollout latency on one machine, all on loopback: a 3-node hub and AGENTS
# embedded agents (small simulated clusters), then `fleet-bench
# rollout-latency --clusters $AGENTS`: phase A applies a PickAll
# ClusterResourcePlacement (maxUnavailable 100%) selecting a namespace with
# one ConfigMap and times Apply reply -> Available on every cluster, REPEAT
# times (deleting it, Works gone, in between); phase B keeps one placement
# and changes the ConfigMap REPEAT times, timing Apply reply -> the new
# resource index Available on every cluster.
#
#   bench/rollout.sh                         # 50 agents, 5 repetitions
#   AGENTS=10 REPEAT=3 bench/rollout.sh
#   BENCH_SKIP_BUILD=1 bench/rollout.sh      # reuse the release binaries
#
# Also prints the Raft entries committed during the run and the resident
# memory of the hub leader, a follower and one agent. Everything it starts is
# stopped, and its temp dir removed, on exit (BENCH_KEEP=1 keeps the temp dir
# with the node and agent logs; NODE_LOG sets the nodes' RUST_LOG, default info).
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTS=${AGENTS:-50}
REPEAT=${REPEAT:-5}
SIM_NODES=${SIM_NODES:-1}
NODE_LOG=${NODE_LOG:-info}
START_TIMEOUT=${START_TIMEOUT:-300}   # seconds for the hub, and for the agents, to come up
TIMEOUT=${TIMEOUT:-300}                # seconds one rollout (or cleanup) may take
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release
[ "${BENCH_SKIP_BUILD:-0}" = 1 ] || cargo build --release -q --bins
for tool in jq python3; do command -v $tool >/dev/null || { apt-get update -qq && apt-get install -y -qq $tool >/dev/null; }; done
for b in fleet-node fleet-agent fleetctl fleet-bench; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build with cargo build --release --bins)" >&2; exit 1; }
done

TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/fleet-rollout.XXXXXX")
PIDS=()
NODE_PID=()
AGENT_PID=()
cleanup() {
  status=$?
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${BENCH_KEEP:-0}" = 1 ] || [ "$status" != 0 ]; then
    [ "$status" = 0 ] || { echo "failed (exit $status); last log lines:" >&2; tail -n 5 "$TMP"/node-*.log "$TMP"/agent-0.log >&2 2>/dev/null || true; }
    [ "${BENCH_KEEP:-0}" = 1 ] && echo "logs kept in $TMP" >&2
  fi
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for SECONDS WHAT CMD...: polls CMD every 0.5 s; fails after SECONDS.
wait_for() {
  local limit=$1 what=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then echo "timed out after ${limit}s waiting for $what" >&2; return 1; fi
    sleep 0.5
  done
}
rss_mib() { awk '/VmRSS/ {printf "%d", $2 / 1024}' "/proc/$1/status"; }

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P=($(port) $(port) $(port))
PEERS="1=127.0.0.1:${P[0]},2=127.0.0.1:${P[1]},3=127.0.0.1:${P[2]}"
export FLEET_ENDPOINTS="127.0.0.1:${P[0]},127.0.0.1:${P[1]},127.0.0.1:${P[2]}" FLEET_TLS_DIR=$TMP/pki
"$BIN/fleetctl" pki init --dir "$TMP/pki" --nodes 3 >/dev/null
for i in 1 2 3; do
  RUST_LOG=$NODE_LOG "$BIN/fleet-node" --id $i --listen "127.0.0.1:${P[$((i-1))]}" --data-dir "$TMP/node-$i" --tls-dir "$TMP/pki" \
    --peers "$PEERS" --init 2>"$TMP/node-$i.log" &
  PIDS+=($!); NODE_PID[$i]=$!
done
has_leader() { "$BIN/fleetctl" cluster status -o json | jq -e '.leader != null'; }
wait_for "$START_TIMEOUT" "a hub leader" has_leader

echo "starting $AGENTS agents ($SIM_NODES simulated node(s) each, ready delay 0s)..."
{
  for n in $(seq 0 $((AGENTS-1))); do
    printf -- '---\napiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata: {name: m-%d, labels: {bench: "true"}}\nspec: {heartbeatPeriodSeconds: 10}\n' "$n"
  done
} | "$BIN/fleetctl" apply -f - >/dev/null
for n in $(seq 0 $((AGENTS-1))); do
  { read -r token; read -r fp; } < <("$BIN/fleetctl" token create --cluster "m-$n" --ttl 30m 2>/dev/null)
  RUST_LOG=warn "$BIN/fleet-agent" --cluster "m-$n" --hub "$FLEET_ENDPOINTS" --data-dir "$TMP/agent-$n" \
    --token "$token" --ca-fingerprint "$fp" --sim-ready-delay 0s \
    --sim-nodes "$SIM_NODES" --sim-capacity cpu=4,memory=16Gi --sim-allocatable cpu=4,memory=16Gi \
    2>"$TMP/agent-$n.log" &
  PIDS+=($!); AGENT_PID[$n]=$!
done
ready() {
  local n
  n=$("$BIN/fleetctl" get mc -o json | jq '[.items[] | select(
      (.status.conditions // [] | any(.type=="Joined" and .status=="True")) and
      (.status.conditions // [] | any(.type=="Healthy" and .status=="True")))] | length')
  [ "$n" -ge "$AGENTS" ]
}
started=$SECONDS
wait_for "$START_TIMEOUT" "$AGENTS agents Joined+Healthy" ready
echo "all $AGENTS agents joined and healthy after $((SECONDS - started)) s"
status_json=$("$BIN/fleetctl" cluster status -o json)
leader=$(jq -r '.leader' <<<"$status_json")
applied() { "$BIN/fleetctl" cluster status -o json | jq -r --argjson l "$leader" '.members[] | select(.id == $l) | .lastApplied'; }
before=$(applied)
echo "hub leader: node $leader; fleet-bench talks to ${FLEET_ENDPOINTS%%,*} (node 1); leader applied index $before"
follower=$(( leader % 3 + 1 ))
echo "resident memory before: leader $(rss_mib "${NODE_PID[$leader]}") MiB, follower $(rss_mib "${NODE_PID[$follower]}") MiB, agent m-0 $(rss_mib "${AGENT_PID[0]}") MiB"

"$BIN/fleet-bench" rollout-latency --endpoints "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" \
  --clusters "$AGENTS" --repeat "$REPEAT" --timeout-seconds "$TIMEOUT"

after=$(applied)
echo "Raft entries committed during the benchmark (leader applied index): $((after - before))"
echo "resident memory after: leader $(rss_mib "${NODE_PID[$leader]}") MiB, follower $(rss_mib "${NODE_PID[$follower]}") MiB, agent m-0 $(rss_mib "${AGENT_PID[0]}") MiB"
