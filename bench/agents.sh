#!/usr/bin/env bash
# Member-agent numbers on one machine, all on loopback:
#  1. hub write rate caused by N idle agents heartbeating every 10 s
#     (status is written only on change, so it should be near zero);
#  2. time from applying a Work to its Available condition (median of 20);
#  3. resident memory of one agent with 100 Works applied.
#
#   bench/agents.sh                      # N=100 agents, 60 s idle window
#   AGENTS=20 IDLE_SECONDS=30 bench/agents.sh
#
# Everything it starts is stopped, and its temp dir removed, on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTS=${AGENTS:-100}
IDLE_SECONDS=${IDLE_SECONDS:-60}
WORKS=${WORKS:-100}
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release
[ "${BENCH_SKIP_BUILD:-0}" = 1 ] || cargo build --release -q --bins
for tool in jq bc; do command -v $tool >/dev/null || { apt-get update -qq && apt-get install -y -qq $tool >/dev/null; }; done

TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/fleet-agents.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

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
until "$BIN/fleetctl" cluster status -o json 2>/dev/null | jq -e '.leader != null' >/dev/null; do sleep 0.1; done

echo "starting $AGENTS agents (heartbeat period 10 s)..."
{
  for n in $(seq 0 $((AGENTS-1))); do
    printf -- '---\napiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata: {name: m-%d, labels: {bench: "true"}}\nspec: {heartbeatPeriodSeconds: 10}\n' "$n"
  done
} | "$BIN/fleetctl" apply -f - >/dev/null
for n in $(seq 0 $((AGENTS-1))); do
  { read -r token; read -r fp; } < <("$BIN/fleetctl" token create --cluster "m-$n" --ttl 10m 2>/dev/null)
  RUST_LOG=warn "$BIN/fleet-agent" --cluster "m-$n" --hub "$FLEET_ENDPOINTS" --data-dir "$TMP/agent-$n" \
    --token "$token" --ca-fingerprint "$fp" --sim-ready-delay 0s 2>"$TMP/agent-$n.log" &
  PIDS+=($!)
  AGENT_PID[$n]=$!
done
until [ "$("$BIN/fleetctl" get mc -o json | jq '[.items[] | select(.status.conditions // [] | any(.type=="Healthy" and .status=="True"))] | length')" -ge "$AGENTS" ]; do
  sleep 0.5
done
echo "all $AGENTS agents joined and healthy; letting them settle for 2 periods"
sleep 20

applied() { "$BIN/fleetctl" cluster status -o json | jq '[.members[] | select(.role=="Leader") | .lastApplied] | first'; }
a0=$(applied); t0=$(date +%s.%N)
sleep "$IDLE_SECONDS"
a1=$(applied); t1=$(date +%s.%N)
rate=$(echo "($a1 - $a0) / ($t1 - $t0)" | bc -l)
printf 'idle write rate: %d Raft entries in %.1f s = %.3f writes/s from %d agents heartbeating every 10 s (%.1f heartbeats/s)\n' \
  "$((a1 - a0))" "$(echo "$t1 - $t0" | bc -l)" "$rate" "$AGENTS" "$(echo "$AGENTS / 10" | bc -l)"

echo "Work apply -> Available on m-0 (ConfigMap only), 20 Works:"
"$BIN/fleet-bench" work-latency --endpoints "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" --cluster m-0 --count 20 | tail -1

echo "applying $WORKS Works (a ConfigMap and a Deployment each) to m-1..."
{
  for w in $(seq 0 $((WORKS-1))); do
    cat <<YAML
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: Work
metadata: {name: w-$w, namespace: fleet-member-m-1}
spec:
  workload:
    manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: c-$w, namespace: default}, data: {k: v}}
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d-$w, namespace: default}
        spec:
          replicas: 1
          selector: {matchLabels: {app: d-$w}}
          template:
            metadata: {labels: {app: d-$w}}
            spec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: 1m, memory: 1Mi}}}]}
YAML
  done
} | "$BIN/fleetctl" apply -f - >/dev/null
until [ "$("$BIN/fleetctl" get work -n fleet-member-m-1 -o json | jq '[.items[] | select(.status.conditions // [] | any(.type=="Available" and .status=="True"))] | length')" -ge "$WORKS" ]; do
  sleep 0.5
done
rss=$(awk '/VmRSS/ {print $2}' "/proc/${AGENT_PID[1]}/status")
idle_rss=$(awk '/VmRSS/ {print $2}' "/proc/${AGENT_PID[2]}/status")
echo "agent resident memory with $WORKS Works applied: $((rss / 1024)) MiB (an idle agent: $((idle_rss / 1024)) MiB)"
