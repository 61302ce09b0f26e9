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
. "$(dirname "$0")/lib/fleet.sh"
cd "$(dirname "$0")/.."
AGENTS=${AGENTS:-50}
REPEAT=${REPEAT:-5}
SIM_NODES=${SIM_NODES:-1}
NODE_LOG=${NODE_LOG:-info}
START_TIMEOUT=${START_TIMEOUT:-300}   # seconds for the hub, and for the agents, to come up
TIMEOUT=${TIMEOUT:-300}                # seconds one rollout (or cleanup) may take
fleet_prepare jq python3
fleet_tmp rollout
FLEET_POLL=0.5
FLEET_FAILURE_LOGS="node-*.log agent-0.log"
fleet_start_hub "$START_TIMEOUT" "$NODE_LOG"

echo "starting $AGENTS agents ($SIM_NODES simulated node(s) each, ready delay 0s)..."
fleet_apply_members "$AGENTS"
for n in $(seq 0 $((AGENTS-1))); do
  fleet_start_agent "$n" 30m \
    --sim-nodes "$SIM_NODES" --sim-capacity cpu=4,memory=16Gi --sim-allocatable cpu=4,memory=16Gi
done
started=$SECONDS
fleet_wait_members "$START_TIMEOUT" "$AGENTS agents Joined+Healthy" "$AGENTS"
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
