#!/usr/bin/env bash
# A local Fleet on this machine: builds the binaries, makes certificates,
# starts a hub trio on 127.0.0.1:7001-7003, applies deploy/examples/.
#
#   deploy/local-fleet.sh up      # build, start, apply the examples, print status
#   deploy/local-fleet.sh status  # cluster status and what is stored
#   deploy/local-fleet.sh down    # stop everything and remove its state
#
# State lives in .fleet-local/ (certificates, data dirs, logs, pids).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STATE=${FLEET_LOCAL_DIR:-$ROOT/.fleet-local}
BIN=$ROOT/target/release
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
      --tls-dir "$STATE/pki" --peers "$(peers)" --init --http-listen "127.0.0.1:$((9000+i))" \
      2>>"$STATE/node-$i.log" &
    echo $! >"$STATE/node-$i.pid"
  done
  echo "waiting for a leader..."
  for _ in $(seq 1 100); do
    if "$BIN/fleetctl" cluster status -o json 2>/dev/null | grep -q '"leader": *[1-9]'; then break; fi
    sleep 0.1
  done
  "$BIN/fleetctl" cluster status
  "$BIN/fleetctl" apply -f deploy/examples/
  echo
  "$BIN/fleetctl" get namespaces
  "$BIN/fleetctl" get configmaps -n web-demo
  cat <<TXT

Local hub running. Use it with:
  export FLEET_ENDPOINTS=$FLEET_ENDPOINTS FLEET_TLS_DIR=$FLEET_TLS_DIR
  $BIN/fleetctl get crp
Logs: $STATE/node-*.log   Stop: deploy/local-fleet.sh down
TXT
}

status() {
  "$BIN/fleetctl" cluster status
  "$BIN/fleetctl" get namespaces
}

down() {
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
