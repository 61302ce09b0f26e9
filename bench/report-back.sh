#!/usr/bin/env bash
# What status back-reporting costs the hub: a 3-node hub, MEMBERS simulated
# members (`fleet-bench members`, in one process) whose Deployments' status
# changes every CHURN, and one ClusterResourcePlacement of DEPLOYMENTS
# Deployments onto all of them. Measured twice in the same run with
# `fleet-bench scale --scenario idle` (Raft entries per second and the
# leader's CPU over IDLE_SECONDS): with `reportBackStrategy` Disabled, then
# with `Mirror` to `WorkAPI`. Prints both tables and the writes per minute.
#
#   bench/report-back.sh                       # 50 members, 100 Deployments, 5s churn
#   MEMBERS=10 DEPLOYMENTS=20 bench/report-back.sh
#
# Uses the release binaries (built unless BENCH_SKIP_BUILD=1); BENCH_BIN
# points at another build (e.g. target/debug).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/fleet.sh"
cd "$here/.."
MEMBERS=${MEMBERS:-50}
DEPLOYMENTS=${DEPLOYMENTS:-100}
CHURN=${CHURN:-5s}
IDLE_SECONDS=${IDLE_SECONDS:-60}
TIMEOUT=${TIMEOUT:-600}
if [ -n "${BENCH_BIN:-}" ]; then BIN=$BENCH_BIN; else fleet_prepare jq python3; fi
fleet_tmp report-back
FLEET_POLL=1

fleet_start_hub 120 warn
fleet_start_churning_members "$MEMBERS" "$CHURN" "$TIMEOUT"

# The namespace, its Deployments, and the placement with `report` as its
# reportBackStrategy (YAML flow).
placement() {
  local report=$1 i
  printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: churn}\n'
  for i in $(seq 1 "$DEPLOYMENTS"); do
    printf -- '---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d-%d, namespace: churn}\n' "$i"
    printf 'spec: {replicas: 2, selector: {matchLabels: {app: d-%d}}, template: {metadata: {labels: {app: d-%d}}, spec: {containers: [{name: c, image: nginx}]}}}\n' "$i" "$i"
  done
  printf -- '---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {name: churn}\n'
  printf 'spec:\n  resourceSelectors: [{group: "", version: v1, kind: Namespace, name: churn}]\n'
  printf '  policy: {placementType: PickAll}\n  strategy: {reportBackStrategy: %s}\n' "$report"
}

available() {
  "$BIN/fleetctl" get crp churn -o json | jq -e --argjson n "$MEMBERS" '
    .metadata.generation as $g
    | (.status.conditions // [] | any(.type == "ClusterResourcePlacementAvailable" and .status == "True"
        and .observedGeneration == $g))
      and ((.status.placementStatuses // []) | length) == $n'
}

measure() {
  local name=$1 report=$2
  placement "$report" | "$BIN/fleetctl" apply -f - >/dev/null
  wait_for "$TIMEOUT" "churn available on $MEMBERS clusters ($name)" available
  echo
  echo "$name: load $(uptime | sed 's/.*load average: //')"
  "$BIN/fleet-bench" scale --endpoints "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" --clusters "$MEMBERS" \
    --scenario idle --idle-seconds "$IDLE_SECONDS" --timeout-seconds "$TIMEOUT" -o json \
    --pids "1=${NODE_PID[1]},2=${NODE_PID[2]},3=${NODE_PID[3]}" 2>>"$TMP/driver.log" >"$TMP/$name.json"
  jq -r --arg name "$name" '.summary | to_entries[]
    | "\($name) \(.key) \(.value.median * 10 | round / 10)"' "$TMP/$name.json"
}

measure disabled '{type: Disabled}'
measure mirror '{type: Mirror, destination: WorkAPI}'
echo
jq -rn --slurpfile off "$TMP/disabled.json" --slurpfile on "$TMP/mirror.json" '
  def rate(r): r[0].summary | to_entries | map(select(.key | test("entries"))) | first.value.median;
  "Raft entries per minute: \(rate($off) * 60 | round) without back-reporting, \(rate($on) * 60 | round) with it (\($on[0].clusters) clusters)"'
