#!/usr/bin/env bash
# What ManifestWork status feedback costs the hub: a 3-node hub, MEMBERS
# simulated members (`fleet-bench members`, in one process) whose
# Deployments' status changes every CHURN, and WORKS ManifestWorks in each
# member's namespace, each holding one Deployment. Measured twice in the
# same run with `fleet-bench scale --scenario idle` (Raft entries per second
# and the leader's CPU over IDLE_SECONDS): first without feedback rules,
# then with a `JSONPaths` rule reading the Deployment's `Available`
# condition's update time (the value that changes every CHURN) and a
# `WellKnownStatus` rule. Prints both tables and the writes per minute.
#
#   bench/status-feedback.sh                    # 50 members, 2 ManifestWorks each (100 in all), 5s churn
#   WORKS=100 bench/status-feedback.sh          # 100 ManifestWorks on each of the 50 (5,000 in all)
#   MEMBERS=10 WORKS=2 IDLE_SECONDS=30 bench/status-feedback.sh
#
# Uses the release binaries (built unless BENCH_SKIP_BUILD=1); BENCH_BIN
# points at another build (e.g. target/debug).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/fleet.sh"
cd "$here/.."
MEMBERS=${MEMBERS:-50}
WORKS=${WORKS:-2}
CHURN=${CHURN:-5s}
IDLE_SECONDS=${IDLE_SECONDS:-60}
TIMEOUT=${TIMEOUT:-900}
if [ -n "${BENCH_BIN:-}" ]; then BIN=$BENCH_BIN; else fleet_prepare jq python3; fi
fleet_tmp status-feedback
FLEET_POLL=2

fleet_start_hub 120 warn
fleet_start_churning_members "$MEMBERS" "$CHURN" "$TIMEOUT"

# Every member's ManifestWorks (YAML flow); with feedback rules when
# `feedback` is 1.
works() {
  local feedback=$1 m i cluster
  for m in $(seq 1 "$MEMBERS"); do
    cluster=$(printf 'sim-%04d' "$m")
    for i in $(seq 1 "$WORKS"); do
      printf -- '---\napiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\n'
      printf 'metadata: {name: w-%d, namespace: %s}\nspec:\n  workload:\n    manifests:\n' "$i" "$cluster"
      printf '      - {apiVersion: apps/v1, kind: Deployment, metadata: {name: d-%d, namespace: churn}, ' "$i"
      printf 'spec: {replicas: 2, selector: {matchLabels: {app: d-%d}}, template: {metadata: {labels: {app: d-%d}}, spec: {containers: [{name: c, image: nginx}]}}}}\n' "$i" "$i"
      if [ "$feedback" = 1 ]; then
        printf '  manifestConfigs:\n    - resourceIdentifier: {group: apps, resource: deployments, name: d-%d, namespace: churn}\n' "$i"
        printf '      feedbackRules:\n        - {type: WellKnownStatus}\n'
        printf '        - {type: JSONPaths, jsonPaths: [{name: updated, path: '\''.status.conditions[?(@.type=="Available")].lastUpdateTime'\''}]}\n'
      fi
    done
  done
}

# Whether every ManifestWork is Available at its generation and, with
# feedback, shows its Deployment's feedback values.
ready() {
  local feedback=$1
  "$BIN/fleetctl" get manifestwork -A -o json | jq -e --argjson n "$((MEMBERS * WORKS))" --argjson fb "$feedback" '
    (.items // .) as $items
    | ($items | length) == $n
      and ($items | all(
        .metadata.generation as $g
        | (.status.conditions // [] | any(.type == "Available" and .status == "True" and .observedGeneration == $g))
          and ($fb == 0 or (.status.resourceStatus.manifests // [] | any((.statusFeedback.values // []) | length > 0)))))'
}

measure() {
  local name=$1 feedback=$2
  works "$feedback" | "$BIN/fleetctl" apply -f - >/dev/null
  wait_for "$TIMEOUT" "$((MEMBERS * WORKS)) ManifestWorks available ($name)" ready "$feedback"
  echo
  echo "$name: load $(uptime | sed 's/.*load average: //')"
  "$BIN/fleet-bench" scale --endpoints "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" --clusters "$MEMBERS" \
    --scenario idle --idle-seconds "$IDLE_SECONDS" --timeout-seconds "$TIMEOUT" -o json \
    --pids "1=${NODE_PID[1]},2=${NODE_PID[2]},3=${NODE_PID[3]}" 2>>"$TMP/driver.log" >"$TMP/$name.json"
  jq -r --arg name "$name" '.summary | to_entries[]
    | "\($name) \(.key) \(.value.median * 10 | round / 10)"' "$TMP/$name.json"
}

measure no-feedback 0
measure feedback 1
echo
jq -rn --slurpfile off "$TMP/no-feedback.json" --slurpfile on "$TMP/feedback.json" --argjson works "$((MEMBERS * WORKS))" '
  def rate(r): r[0].summary | to_entries | map(select(.key | test("entries"))) | first.value.median;
  "Raft entries per minute: \(rate($off) * 60 | round) without status feedback, \(rate($on) * 60 | round) with it (\($works) ManifestWorks on \($on[0].clusters) clusters)"'
