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
#   IDLE_CLUSTERS=3000 bench/placements.sh     # plus 3000 MemberClusters with no agent
#
# IDLE_CLUSTERS MemberClusters (idle-0 ...) never join: they are filtered as
# not eligible, but every scheduling pass still reads them, so they show what
# the size of the fleet costs.
#
# Everything it starts is stopped, and its temp dir removed, on exit
# (BENCH_KEEP=1 keeps the temp dir with the node and agent logs).
set -euo pipefail
. "$(dirname "$0")/lib/fleet.sh"
cd "$(dirname "$0")/.."
AGENTS=${AGENTS:-6}
COUNT=${COUNT:-50}
CLUSTERS=${CLUSTERS:-3}
IDLE_CLUSTERS=${IDLE_CLUSTERS:-0}
START_TIMEOUT=${START_TIMEOUT:-120}   # seconds for the hub, and for the agents, to come up
fleet_prepare jq python3
fleet_tmp placements
fleet_start_hub "$START_TIMEOUT"

REGIONS=(east west central)
echo "starting $AGENTS agents (regions ${REGIONS[*]} round-robin; member i has i+1 nodes of 4 CPUs)..."
fleet_apply_members "$AGENTS" "${REGIONS[@]}"
for n in $(seq 0 $((AGENTS-1))); do
  fleet_start_agent "$n" 10m \
    --sim-nodes $((n + 1)) --sim-capacity cpu=4,memory=16Gi --sim-allocatable cpu=4,memory=16Gi
done
fleet_wait_members "$START_TIMEOUT" "$AGENTS agents Joined+Healthy with properties" "$AGENTS" \
  '.status.resourceUsage.available.cpu != null'
echo "all $AGENTS agents joined and healthy"
"$BIN/fleetctl" get mc -o json | jq -r '.items[] | "  \(.metadata.name)  region=\(.metadata.labels.region)  available cpu=\(.status.resourceUsage.available.cpu)"'
if [ "$IDLE_CLUSTERS" -gt 0 ]; then
  echo "applying $IDLE_CLUSTERS MemberClusters without agents..."
  for n in $(seq 0 $((IDLE_CLUSTERS-1))); do
    printf -- '---\napiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata: {name: idle-%d, labels: {region: %s}}\nspec: {}\n' \
      "$n" "${REGIONS[$((n % 3))]}"
  done | "$BIN/fleetctl" apply -f - >/dev/null
fi
leader=$("$BIN/fleetctl" cluster status -o json | jq -r '.leader')
echo "hub leader: node $leader; fleet-bench talks to ${FLEET_ENDPOINTS%%,*} (node 1)"

echo "ClusterResourcePlacement Apply reply -> Scheduled, $COUNT placements (PickN $CLUSTERS, sorter + region spread):"
"$BIN/fleet-bench" placement-latency --endpoints "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" \
  --count "$COUNT" --clusters "$CLUSTERS"
