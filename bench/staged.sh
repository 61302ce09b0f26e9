#!/usr/bin/env bash
# Staged update run latency on one machine, all on loopback: a 3-node hub
# and AGENTS embedded agents labelled region=east|west|central round-robin,
# then `fleet-bench staged-latency --clusters $AGENTS`: an External PickAll
# placement, a three-stage strategy (one stage per region, maxConcurrency
# MAX_CONCURRENCY, no waits or approvals) and REPEAT runs, each over a new
# resource snapshot, timed from the run's Apply reply to Succeeded and split
# into time with the agents and time with the hub's controllers.
#
#   bench/staged.sh                               # 50 agents, 3 runs, maxConcurrency 100%
#   MAX_CONCURRENCY=1 AGENTS=50 bench/staged.sh    # one cluster at a time in each stage
#   BENCH_SKIP_BUILD=1 bench/staged.sh            # reuse the release binaries
#
# Everything it starts is stopped, and its temp dir removed, on exit
# (BENCH_KEEP=1 keeps the logs; NODE_LOG sets the nodes' RUST_LOG, default warn).
set -euo pipefail
. "$(dirname "$0")/lib/fleet.sh"
cd "$(dirname "$0")/.."
AGENTS=${AGENTS:-50}
REPEAT=${REPEAT:-3}
MAX_CONCURRENCY=${MAX_CONCURRENCY:-100%}
NODE_LOG=${NODE_LOG:-warn}
START_TIMEOUT=${START_TIMEOUT:-300}
TIMEOUT=${TIMEOUT:-300}
fleet_prepare jq python3
fleet_tmp staged
FLEET_POLL=0.5
FLEET_FAILURE_LOGS="node-*.log agent-0.log"
fleet_start_hub "$START_TIMEOUT" "$NODE_LOG"

echo "starting $AGENTS agents (1 simulated node each, ready delay 0s)..."
fleet_apply_members "$AGENTS" east west central
for n in $(seq 0 $((AGENTS-1))); do
  fleet_start_agent "$n" 30m --sim-nodes 1 --sim-capacity cpu=4,memory=16Gi --sim-allocatable cpu=4,memory=16Gi
done
started=$SECONDS
fleet_wait_members "$START_TIMEOUT" "$AGENTS agents Joined+Healthy" "$AGENTS"
echo "all $AGENTS agents joined and healthy after $((SECONDS - started)) s"
leader=$("$BIN/fleetctl" cluster status -o json | jq -r '.leader')
echo "hub leader: node $leader; fleet-bench talks to ${FLEET_ENDPOINTS%%,*} (node 1)"

"$BIN/fleet-bench" staged-latency --endpoints "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" \
  --clusters "$AGENTS" --max-concurrency "$MAX_CONCURRENCY" --repeat "$REPEAT" --timeout-seconds "$TIMEOUT"
