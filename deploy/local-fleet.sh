#!/usr/bin/env bash
# A local Fleet on this machine: builds the binaries, makes certificates,
# starts a hub trio on 127.0.0.1:7001-7003 and three member agents on embedded
# (simulated) clusters in regions east, west and central, applies deploy/examples/
# (a namespace with a small app and a PickN placement spread over regions),
# waits until the placement is available and prints its status.
#
#   deploy/local-fleet.sh up      # build, start, apply the examples, print status
#   deploy/local-fleet.sh status  # cluster status and what is stored
#   deploy/local-fleet.sh down    # stop everything and remove its state
#
# State lives in .fleet-local/ (certificates, data dirs, logs, pids).
# FLEET_DRIFT_CHECK_INTERVAL (default 15s) is passed to the agents'
# --drift-check-interval.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STATE=${FLEET_LOCAL_DIR:-$ROOT/.fleet-local}
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
PORTS=(7001 7002 7003)
export FLEET_ENDPOINTS=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
export FLEET_TLS_DIR=$STATE/pki

peers() {
  local out="" i
  for i in 1 2 3; do out+="${out:+,}$i=127.0.0.1:${PORTS[$((i-1))]}"; done
  echo "$out"
}

up() {
  echo "building release binaries (first time: several minutes)..."
  cargo build --release --bins -q
  mkdir -p "$STATE"
  [ -f "$STATE/pki/ca.pem" ] || "$BIN/fleetctl" pki init --dir "$STATE/pki" --nodes 3 --hosts 127.0.0.1,localhost
  for i in 1 2 3; do
    if [ -f "$STATE/node-$i.pid" ] && kill -0 "$(cat "$STATE/node-$i.pid")" 2>/dev/null; then continue; fi
    "$BIN/fleet-node" --id "$i" --listen "127.0.0.1:${PORTS[$((i-1))]}" --data-dir "$STATE/node-$i" \
      --tls-dir "$STATE/pki" --peers "$(peers)" --init --http-listen "127.0.0.1:$((9000+i))" --kube-listen "127.0.0.1:$((6440+i))" \
      >>"$STATE/node-$i.log" 2>&1 &
    echo $! >"$STATE/node-$i.pid"
  done
  echo "waiting for a leader..."
  for _ in $(seq 1 100); do
    if "$BIN/fleetctl" cluster status -o json 2>/dev/null | grep -q '"leader": *[1-9]'; then break; fi
    sleep 0.1
  done
  "$BIN/fleetctl" cluster status
  start_members
  "$BIN/fleetctl" apply -f deploy/examples/
  echo
  echo "waiting for the placement to be available on its clusters..."
  "$BIN/fleetctl" rollout status crp web-demo -w --timeout 2m
  echo
  "$BIN/fleetctl" get crp -o wide
  "$BIN/fleetctl" describe crp web-demo | sed -n '/^Status:/,/^Latest Policy Snapshot:/p' | sed '$d'
  cat <<TXT

Local hub running. Use it with:
  export FLEET_ENDPOINTS=$FLEET_ENDPOINTS FLEET_TLS_DIR=$FLEET_TLS_DIR
  $BIN/fleetctl get crp
Or with kubectl (every node serves the Kubernetes API on 127.0.0.1:6441-6443):
  $BIN/fleetctl kubeconfig > $STATE/kubeconfig && export KUBECONFIG=$STATE/kubeconfig && kubectl get crp -o wide
Look inside a member:  $BIN/fleet-agent inspect --data-dir $STATE/agent-east-1 -A   (or agent-west-1, agent-central-1)
Change it behind Fleet's back:  $BIN/fleet-agent patch --data-dir $STATE/agent-east-1 KIND NAME -n NS -p '{...}'   (also apply -f, delete)
Logs: $STATE/node-*.log, $STATE/agent-*.log   Stop: deploy/local-fleet.sh down
TXT
}

# name region nodes: MemberCluster with labels, a token, then the agent.
MEMBERS=("east-1 east 3" "west-1 west 4" "central-1 central 2")

start_members() {
  local m name region nodes token fp
  for m in "${MEMBERS[@]}"; do
    read -r name region nodes <<<"$m"
    if [ -f "$STATE/agent-$name.pid" ] && kill -0 "$(cat "$STATE/agent-$name.pid")" 2>/dev/null; then continue; fi
    printf 'apiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata:\n  name: %s\n  labels: {region: %s, environment: demo}\nspec:\n  heartbeatPeriodSeconds: 5\n' \
      "$name" "$region" | "$BIN/fleetctl" apply -f - >/dev/null
    local args=()
    if [ ! -f "$STATE/agent-$name/tls/agent.pem" ]; then
      { read -r token; read -r fp; } < <("$BIN/fleetctl" token create --cluster "$name" --ttl 10m 2>/dev/null)
      args=(--token "$token" --ca-fingerprint "$fp")
    fi
    "$BIN/fleet-agent" --cluster "$name" --hub "$FLEET_ENDPOINTS" --data-dir "$STATE/agent-$name" \
      --embedded --sim-nodes "$nodes" --drift-check-interval "${FLEET_DRIFT_CHECK_INTERVAL:-15s}" \
      "${args[@]}" >>"$STATE/agent-$name.log" 2>&1 &
    echo $! >"$STATE/agent-$name.pid"
  done
  echo "waiting for the members to join..."
  for _ in $(seq 1 100); do
    if [ "$("$BIN/fleetctl" get mc -o wide 2>/dev/null | grep -c ' True ')" -ge "${#MEMBERS[@]}" ]; then break; fi
    sleep 0.2
  done
  "$BIN/fleetctl" get mc -o wide
}

status() {
  "$BIN/fleetctl" cluster status
  "$BIN/fleetctl" get mc -o wide
  "$BIN/fleetctl" get crp -o wide
  "$BIN/fleetctl" rollout status crp web-demo || true
}

down() {
  for pidfile in "$STATE"/agent-*.pid; do
    [ -f "$pidfile" ] && kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
  done
  for i in 1 2 3; do
    if [ -f "$STATE/node-$i.pid" ]; then
      pid=$(cat "$STATE/node-$i.pid")
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
  rm -rf "$STATE"
  echo "local fleet stopped and removed"
}

case "${1:-}" in
  up) up ;;
  status) status ;;
  down) down ;;
  *) echo "usage: $0 up|status|down" >&2; exit 2 ;;
esac
