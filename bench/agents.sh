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
# Everything it starts is stopped, and its temp dir removed, on exit
# (BENCH_KEEP=1 keeps the temp dir with the node and agent logs).
set -euo pipefail
. "$(dirname "$0")/lib/fleet.sh"
cd "$(dirname "$0")/.."
AGENTS=${AGENTS:-100}
IDLE_SECONDS=${IDLE_SECONDS:-60}
WORKS=${WORKS:-100}
START_TIMEOUT=600   # seconds for the hub, and for the agents, to come up
fleet_prepare jq bc python3
fleet_tmp agents
FLEET_POLL=0.5
FLEET_FAILURE_LOGS="node-*.log agent-0.log"
fleet_start_hub "$START_TIMEOUT"

echo "starting $AGENTS agents (heartbeat period 10 s)..."
fleet_apply_members "$AGENTS"
for n in $(seq 0 $((AGENTS-1))); do
  fleet_start_agent "$n" 10m
done
fleet_wait_members "$START_TIMEOUT" "$AGENTS agents Joined+Healthy" "$AGENTS"
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
echo "agent resident memory with $WORKS Works applied: $(rss_mib "${AGENT_PID[1]}") MiB (an idle agent: $(rss_mib "${AGENT_PID[2]}") MiB)"
