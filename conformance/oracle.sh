#!/usr/bin/env bash
# Runs one of the placement oracles (docs/conformance.md) against Fleet:
#
#   conformance/oracle.sh NAME SIDE [ORACLE ARGS...]
#
# NAME is the oracle (conformance/NAME/, built to target/NAME/NAME), SIDE the
# reference implementation's name (ocm, kubefleet: the oracle takes
# --SIDE-kubeconfig). It starts a real kube-apiserver (realkube) for the
# reference side, a Fleet hub trio serving its Kubernetes API, and one
# fleet-agent per pool cluster (embedded simulated clusters of the sizes the
# oracle prints), then runs the oracle, which applies random but valid
# scenarios to both and compares what they decide. Ends with the oracle's line
#
#   NAME: S scenarios, D differences, W written down
#
# and exits non-zero when D > 0. Builds what it needs first (cargo build of
# the three binaries, realkube and the oracle with Go 1.26+); set
# ORACLE_NO_BUILD=1 to use what is built. Everything runs on loopback in a
# temp dir, removed at the end (kept with ORACLE_KEEP=1, for the logs).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: conformance/oracle.sh NAME SIDE [ORACLE ARGS...]" >&2; exit 2; }
NAME=$1
SIDE=$2
shift 2
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET/debug
REALKUBE=$TARGET/realkube/realkube
ORACLE=$TARGET/$NAME/$NAME

say() { echo "$NAME: $*" >&2; }

if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
if [ -z "${ORACLE_NO_BUILD:-}" ]; then
  command -v go >/dev/null || { say "the Go toolchain is missing: install go 1.26 or newer"; exit 1; }
  cargo build -q -p fleet-node -p fleetctl -p fleet-agent --bins
  realkube/build.sh "$REALKUBE"
  conformance/$NAME/build.sh "$ORACLE"
fi

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -n "${ORACLE_KEEP:-}" ]; then say "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The reference side: a real API server (etcd, kube-apiserver, controller
# manager for garbage collection; no Nodes needed).
mkdir -p "$WORK/$SIDE"
"$REALKUBE" --data-dir "$WORK/$SIDE/data" --name "$SIDE" --kubeconfig "$WORK/$SIDE/kubeconfig" --nodes 0 \
  >"$WORK/$SIDE/realkube.out" 2>"$WORK/$SIDE/realkube.log" &
PIDS+=($!)
REALKUBE_PID=$!

# The Fleet side: a trio serving the Kubernetes API. FLEET_BIN,
# FLEET_ENDPOINTS and FLEET_TLS_DIR are also for an oracle that runs
# fleetctl and fleet-agent itself.
export FLEET_BIN=$BIN
export FLEET_TLS_DIR=$WORK/pki
"$BIN/fleetctl" pki init --dir "$FLEET_TLS_DIR" --nodes 3 --hosts 127.0.0.1,localhost >/dev/null
PORTS=("$(free_port)" "$(free_port)" "$(free_port)")
PEERS="1=127.0.0.1:${PORTS[0]},2=127.0.0.1:${PORTS[1]},3=127.0.0.1:${PORTS[2]}"
export FLEET_ENDPOINTS="127.0.0.1:${PORTS[0]},127.0.0.1:${PORTS[1]},127.0.0.1:${PORTS[2]}"
for i in 1 2 3; do
  "$BIN/fleet-node" --id "$i" --listen "127.0.0.1:${PORTS[$((i-1))]}" --data-dir "$WORK/node-$i" \
    --tls-dir "$FLEET_TLS_DIR" --peers "$PEERS" --init --kube-listen "127.0.0.1:$(free_port)" \
    >"$WORK/node-$i.log" 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 1 300); do
  if "$BIN/fleetctl" cluster status -o json 2>/dev/null | grep -q '"leader": *[1-9]'; then break; fi
  sleep 0.1
done
for _ in $(seq 1 200); do
  "$BIN/fleetctl" kubeconfig --user admin >"$WORK/fleet-kubeconfig" 2>/dev/null || true
  [ "$(grep -c 'name: fleet-node-' "$WORK/fleet-kubeconfig")" -ge 3 ] && break
  sleep 0.1
done

# The pool: one agent per cluster, heartbeating every second.
"$ORACLE" --pool >"$WORK/pool"
while read -r name flags; do
  printf 'apiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata: {name: %s}\nspec: {heartbeatPeriodSeconds: 1}\n' "$name" \
    | "$BIN/fleetctl" apply -f - >/dev/null
  { read -r token; read -r fp; } < <("$BIN/fleetctl" token create --cluster "$name" --ttl 10m 2>/dev/null)
  # shellcheck disable=SC2086 # the pool's flags are words
  "$BIN/fleet-agent" --cluster "$name" --hub "$FLEET_ENDPOINTS" --data-dir "$WORK/agent-$name" \
    --token "$token" --ca-fingerprint "$fp" $flags >"$WORK/agent-$name.log" 2>&1 &
  PIDS+=($!)
done <"$WORK/pool"

for _ in $(seq 1 1200); do
  grep -q '^realkube: ready' "$WORK/$SIDE/realkube.out" 2>/dev/null && break
  kill -0 "$REALKUBE_PID" 2>/dev/null || { tail -20 "$WORK/$SIDE/realkube.log" >&2; say "realkube exited"; exit 1; }
  sleep 0.2
done
grep -q '^realkube: ready' "$WORK/$SIDE/realkube.out" || { say "realkube not ready after 240s"; exit 1; }

set +e
"$ORACLE" "--$SIDE-kubeconfig" "$WORK/$SIDE/kubeconfig" --fleet-kubeconfig "$WORK/fleet-kubeconfig" \
  --written-down "conformance/$NAME/written-down.json" "$@" | tee "$WORK/oracle.out"
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || exit "$status"
summary=$(grep "^$NAME: [0-9]* scenarios" "$WORK/oracle.out" | tail -1)
differences=$(echo "$summary" | sed -E 's/.* ([0-9]+) differences.*/\1/')
[ "$differences" = 0 ]
