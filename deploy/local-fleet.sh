#!/usr/bin/env bash
# A local Fleet on this machine: builds the binaries, makes certificates,
# starts a hub trio on 127.0.0.1:7001-7003 and three member agents on embedded
# (simulated) clusters in regions east, west and central, applies deploy/examples/
# (a namespace with a small app and a PickN placement spread over regions),
# waits until the placement is available and prints its status.
#
#   deploy/local-fleet.sh up      # build, start, apply the examples, print status
#   deploy/local-fleet.sh up --kube   # the same with real Kubernetes members (see below)
#   deploy/local-fleet.sh status  # cluster status and what is stored
#   deploy/local-fleet.sh env     # the PATH/FLEET_ENDPOINTS/FLEET_TLS_DIR lines: eval "$(deploy/local-fleet.sh env)"
#   deploy/local-fleet.sh down    # stop everything and remove its state
#
# State lives in .fleet-local/ (certificates, data dirs, logs, pids).
# FLEET_DRIFT_CHECK_INTERVAL (default 15s) is passed to the agents'
# --drift-check-interval.
#
# With --kube every member is a real Kubernetes cluster instead of an embedded
# one: realkube/ (etcd, kube-apiserver, controller manager, scheduler and KWOK
# fake Nodes in one process on loopback) is built with Go ($GO, or go on PATH,
# or /usr/local/go/bin/go) into target/realkube/, one runs per member with its
# data and logs in .fleet-local/members/<name>/, its admin kubeconfig at
# .fleet-local/members/<name>/kubeconfig, and each agent runs with
# --kubeconfig of its cluster. `down` stops those clusters too.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STATE=${FLEET_LOCAL_DIR:-$ROOT/.fleet-local}
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
PORTS=(7001 7002 7003)
REALKUBE=${CARGO_TARGET_DIR:-$ROOT/target}/realkube/realkube
KUBE=
export FLEET_ENDPOINTS=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
export FLEET_TLS_DIR=$STATE/pki

peers() {
  local out="" i
  for i in 1 2 3; do out+="${out:+,}$i=127.0.0.1:${PORTS[$((i-1))]}"; done
  echo "$out"
}

up() {
  KUBE=
  case "${1:-}" in
    "") ;;
    --kube) KUBE=1 ;;
    *) echo "usage: $0 up [--kube]" >&2; exit 2 ;;
  esac
  check_mode
  echo "building release binaries (first time: several minutes)..."
  cargo build --release --bins -q
  mkdir -p "$STATE"
  [ -z "$KUBE" ] || start_clusters
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
  [ -z "$KUBE" ] || wait_clusters
  start_members
  "$BIN/fleetctl" apply -f deploy/examples/
  echo
  echo "waiting for the placement to be available on its clusters..."
  "$BIN/fleetctl" rollout status crp web-demo -w --timeout 2m
  echo
  "$BIN/fleetctl" get crp -o wide
  "$BIN/fleetctl" describe crp web-demo | sed -n '/^Status:/,/^Latest Policy Snapshot:/p' | sed '$d'
  cat <<TXT

Local hub running. Paste these lines into your shell to use it
(or run: eval "\$(deploy/local-fleet.sh env)"):

$(env_lines)

then: fleetctl get crp   (fleetctl completion bash|zsh|fish for completion)
Metrics: http://127.0.0.1:9001/metrics (nodes 2, 3: ports 9002, 9003); dashboard: deploy/grafana-dashboard.json
Or with kubectl (every node serves the Kubernetes API on 127.0.0.1:6441-6443):
  fleetctl kubeconfig > $STATE/kubeconfig && export KUBECONFIG=$STATE/kubeconfig && kubectl get crp -o wide
$(member_lines)
TXT
}

# How to look inside the members, by kind of member.
member_lines() {
  if [ -z "$KUBE" ]; then
    cat <<TXT
Look inside a member:  $BIN/fleet-agent inspect --data-dir $STATE/agent-east-1 -A   (or agent-west-1, agent-central-1)
Change it behind Fleet's back:  $BIN/fleet-agent patch --data-dir $STATE/agent-east-1 KIND NAME -n NS -p '{...}'   (also apply -f, delete)
Logs: $STATE/node-*.log, $STATE/agent-*.log   Stop: deploy/local-fleet.sh down
TXT
  else
    cat <<TXT
The members are real Kubernetes clusters (realkube, KWOK Nodes):
  kubectl --kubeconfig $STATE/members/east-1/kubeconfig get ns,cm,deploy,pods -A   (or west-1, central-1)
Change one behind Fleet's back with that kubectl (kubectl edit, patch, delete).
Logs: $STATE/node-*.log, $STATE/agent-*.log, $STATE/members/*/realkube.log   Stop: deploy/local-fleet.sh down
TXT
  fi
}

# A state dir holds one kind of members: the agents' data (what they placed,
# where) belongs to the clusters they were started with.
check_mode() {
  local want=embedded had
  [ -z "$KUBE" ] || want=kube
  if [ -f "$STATE/members.mode" ]; then
    had=$(cat "$STATE/members.mode")
    if [ "$had" != "$want" ]; then
      echo "$STATE holds a local fleet with $had members; run '$0 down' before 'up${KUBE:+ --kube}'" >&2
      exit 1
    fi
  elif [ -d "$STATE" ] && [ -n "$(ls -d "$STATE"/agent-* 2>/dev/null)" ] && [ "$want" = kube ]; then
    echo "$STATE holds a local fleet with embedded members; run '$0 down' before 'up --kube'" >&2
    exit 1
  fi
  # Plain `up` leaves no marker, as before; --kube does.
  if [ "$want" = kube ]; then mkdir -p "$STATE" && echo kube >"$STATE/members.mode"; fi
}

# The Go toolchain: $GO, else go on PATH, else Go's default install.
go_binary() {
  if [ -n "${GO:-}" ]; then echo "$GO"; return; fi
  if command -v go >/dev/null 2>&1; then command -v go; return; fi
  if [ -x /usr/local/go/bin/go ]; then echo /usr/local/go/bin/go; return; fi
  echo "up --kube builds realkube/ with Go: install Go 1.26 or newer, or set GO" >&2
  exit 1
}

# Builds realkube and starts one real cluster per member, all at once (a
# cold start takes tens of seconds: the hub starts meanwhile).
start_clusters() {
  local go m name region nodes dir
  go=$(go_binary)
  echo "building realkube (first time: several minutes)..."
  # build.sh stamps the pinned Kubernetes release into the binary (the
  # tests build the same file the same way, so neither relinks the other's).
  PATH="$(dirname "$go"):$PATH" realkube/build.sh "$REALKUBE"
  for m in "${MEMBERS[@]}"; do
    read -r name region nodes <<<"$m"
    dir=$STATE/members/$name
    if [ -f "$dir/realkube.pid" ] && kill -0 "$(cat "$dir/realkube.pid")" 2>/dev/null; then continue; fi
    mkdir -p "$dir"
    # stdout carries only the ready line (kept apart so an older run's line
    # is never taken for this one's); the components log to realkube.log.
    "$REALKUBE" --data-dir "$dir/data" --name "$name" --kubeconfig "$dir/kubeconfig" --nodes "$nodes" \
      --node-labels "topology.kubernetes.io/region=$region" >"$dir/realkube.out" 2>>"$dir/realkube.log" &
    echo $! >"$dir/realkube.pid"
  done
}

# Waits until every member's realkube has printed its ready line.
wait_clusters() {
  local m name dir pid
  echo "waiting for the member clusters (Kubernetes control planes) to be ready..."
  for m in "${MEMBERS[@]}"; do
    read -r name _ _ <<<"$m"
    dir=$STATE/members/$name
    pid=$(cat "$dir/realkube.pid")
    for _ in $(seq 1 1200); do
      grep -q '^realkube: ready' "$dir/realkube.out" 2>/dev/null && break
      if ! kill -0 "$pid" 2>/dev/null; then
        echo "realkube for $name exited; the end of $dir/realkube.log:" >&2
        tail -20 "$dir/realkube.log" >&2
        exit 1
      fi
      sleep 0.2
    done
    if ! grep -q '^realkube: ready' "$dir/realkube.out" 2>/dev/null; then
      echo "realkube for $name not ready after 240s; see $dir/realkube.log" >&2
      exit 1
    fi
    echo "  $name: $(sed -n 's/^realkube: ready //p' "$dir/realkube.out")"
  done
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
    if [ -n "$KUBE" ]; then
      args=(--kubeconfig "$STATE/members/$name/kubeconfig")
    else
      args=(--embedded --sim-nodes "$nodes")
    fi
    if [ ! -f "$STATE/agent-$name/tls/agent.pem" ]; then
      { read -r token; read -r fp; } < <("$BIN/fleetctl" token create --cluster "$name" --ttl 10m 2>/dev/null)
      args+=(--token "$token" --ca-fingerprint "$fp")
    fi
    "$BIN/fleet-agent" --cluster "$name" --hub "$FLEET_ENDPOINTS" --data-dir "$STATE/agent-$name" \
      --drift-check-interval "${FLEET_DRIFT_CHECK_INTERVAL:-15s}" \
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

# The shell lines that put the binaries on PATH and point fleetctl at the hub.
env_lines() {
  printf 'export PATH="%s:$PATH"\nexport FLEET_ENDPOINTS=%s\nexport FLEET_TLS_DIR=%s\n' \
    "$BIN" "$FLEET_ENDPOINTS" "$FLEET_TLS_DIR"
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
  # Real member clusters last (their agents are gone): SIGTERM stops each in
  # order (KWOK, scheduler, controller manager, API server, etcd).
  for pidfile in "$STATE"/members/*/realkube.pid; do
    if [ -f "$pidfile" ]; then
      pid=$(cat "$pidfile")
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
  done
  rm -rf "$STATE"
  echo "local fleet stopped and removed"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  status) status ;;
  env) env_lines ;;
  down) down ;;
  *) echo "usage: $0 up [--kube]|status|env|down" >&2; exit 2 ;;
esac
