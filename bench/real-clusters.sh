#!/usr/bin/env bash
# Agents on real Kubernetes clusters (realkube: etcd, kube-apiserver,
# controller manager, scheduler and KWOK Nodes in one process each), all on
# loopback:
#  1. start-up time and memory of one real cluster;
#  2. a 200-object placement (a Namespace, a CRD and 20 custom resources,
#     40 Deployments, 40 Services, 98 ConfigMaps) onto CLUSTERS real clusters:
#     time from applying the placement to its Available condition, the API
#     requests each agent made meanwhile, and each agent's memory;
#  3. the same agents idle for IDLE_SECONDS: API requests per minute.
# Requests are counted from each API server's audit log, by the agent's user
# agent.
#
#   bench/real-clusters.sh
#   CLUSTERS=3 IDLE_SECONDS=120 BENCH_SKIP_BUILD=1 bench/real-clusters.sh
#
# Everything it starts is stopped, and its temp dir removed, on exit
# (BENCH_KEEP=1 keeps the temp dir with every log).
set -euo pipefail
. "$(dirname "$0")/lib/fleet.sh"
cd "$(dirname "$0")/.."
CLUSTERS=${CLUSTERS:-3}
IDLE_SECONDS=${IDLE_SECONDS:-60}
START_TIMEOUT=600
fleet_prepare jq python3
fleet_tmp real
FLEET_FAILURE_LOGS="node-*.log agent-*.log kube-*/realkube.log"
realkube/build.sh "$TMP/realkube"

# The User-Agent of every request a fleet-agent makes.
AGENT_UA='^fleet-agent/'

echo "starting $CLUSTERS real clusters..."
for n in $(seq 0 $((CLUSTERS-1))); do
  mkdir -p "$TMP/kube-$n"
  "$TMP/realkube" --data-dir "$TMP/kube-$n/data" --name "m-$n" --nodes 3 --node-cpu 16 --node-memory 64Gi \
    --audit-log "$TMP/kube-$n/audit.log" >"$TMP/kube-$n/ready" 2>"$TMP/kube-$n/realkube.log" &
  PIDS+=($!); KUBE_PID[$n]=$!
done
t0=$(date +%s.%N)
wait_for "$START_TIMEOUT" "cluster m-0 ready" grep -q ready "$TMP/kube-0/ready"
printf 'one real cluster (of %d starting at once): ready in %.1f s, %d MiB resident\n' \
  "$CLUSTERS" "$(echo "$(date +%s.%N) - $t0" | bc -l)" "$(rss_mib "${KUBE_PID[0]}")"
for n in $(seq 1 $((CLUSTERS-1))); do wait_for "$START_TIMEOUT" "cluster m-$n ready" grep -q ready "$TMP/kube-$n/ready"; done

fleet_start_hub "$START_TIMEOUT"
fleet_apply_members "$CLUSTERS"
for n in $(seq 0 $((CLUSTERS-1))); do
  fleet_start_agent "$n" 10m --kubeconfig "$TMP/kube-$n/data/kubeconfig"
done
fleet_wait_members "$START_TIMEOUT" "$CLUSTERS agents Joined+Healthy" "$CLUSTERS"

# agent_requests N: requests the agent of m-N has made so far.
agent_requests() { jq -r 'select(.stage=="ResponseComplete") | .userAgent' "$TMP/kube-$1/audit.log" | grep -c "$AGENT_UA" || true; }

{
  cat <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: v1
kind: Namespace
metadata: {name: bench}
YAML
  for i in $(seq 0 19); do
    printf -- '---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g-%d, namespace: bench}\nspec: {size: %d}\n' "$i" "$i"
  done
  for i in $(seq 0 39); do
    cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d-$i, namespace: bench}
spec:
  replicas: 1
  selector: {matchLabels: {app: d-$i}}
  template:
    metadata: {labels: {app: d-$i}}
    spec: {containers: [{name: app, image: app:1, resources: {requests: {cpu: 10m, memory: 16Mi}}}]}
---
apiVersion: v1
kind: Service
metadata: {name: s-$i, namespace: bench}
spec: {selector: {app: d-$i}, ports: [{port: 80}]}
YAML
  done
  for i in $(seq 0 97); do
    printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c-%d, namespace: bench}\ndata: {k: v%d}\n' "$i" "$i"
  done
} | "$BIN/fleetctl" apply -f - >/dev/null

for n in $(seq 0 $((CLUSTERS-1))); do before[$n]=$(agent_requests "$n"); done
t0=$(date +%s.%N)
"$BIN/fleetctl" apply -f - >/dev/null <<'YAML'
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: bench}
spec:
  resourceSelectors:
    - {group: apiextensions.k8s.io, version: v1, kind: CustomResourceDefinition, name: gadgets.example.com}
    - {group: "", version: v1, kind: Namespace, name: bench}
  policy: {placementType: PickAll}
YAML
crp_available() {
  "$BIN/fleetctl" get crp bench -o json |
    jq -e '.status.conditions // [] | any(.type=="ClusterResourcePlacementAvailable" and .status=="True")'
}
wait_for "$START_TIMEOUT" "placement bench Available" crp_available
elapsed=$(echo "$(date +%s.%N) - $t0" | bc -l)
printf '200 objects onto %d real clusters: Available in %.1f s\n' "$CLUSTERS" "$elapsed"
for n in $(seq 0 $((CLUSTERS-1))); do
  printf '  m-%d: %d API requests by its agent, agent %d MiB resident\n' \
    "$n" "$(( $(agent_requests "$n") - before[n] ))" "$(rss_mib "${AGENT_PID[$n]}")"
done

echo "idle for $IDLE_SECONDS s..."
for n in $(seq 0 $((CLUSTERS-1))); do before[$n]=$(agent_requests "$n"); done
sleep "$IDLE_SECONDS"
for n in $(seq 0 $((CLUSTERS-1))); do
  printf '  m-%d idle: %.1f API requests per minute by its agent (heartbeat every 10 s; drift found by watches)\n' \
    "$n" "$(echo "($(agent_requests "$n") - ${before[n]}) * 60 / $IDLE_SECONDS" | bc -l)"
done
