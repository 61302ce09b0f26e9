#!/usr/bin/env bash
# The scale table on one machine, all on loopback: a 3-node hub,
# MEMBERS simulated member clusters in one `fleet-bench members` process
# (each with its own key, certificate and connection, heartbeating every
# HEARTBEAT s), one real `fleet-agent` on an embedded target (for its
# memory), then `fleet-bench scale` for each scenario, RUNS times each,
# printing the median and spread of every figure, with the load average
# (uptime) before each scenario.
#
#   bench/scale.sh                                   # 1,000 members, 3 runs of everything
#   MEMBERS=5000 RUNS=3 bench/scale.sh
#   SCENARIOS="pick-n idle" MEMBERS=200 bench/scale.sh
#   BENCH_SKIP_BUILD=1 bench/scale.sh                # reuse the release binaries
#
# Scenarios, in this order (SCENARIOS picks a subset):
#   pick-n      new PickN(100) placement -> Available on its 100 clusters
#   pick-all    new PickAll placement -> Available on every cluster
#   rollout     ConfigMap change under maxUnavailable 25%: first wave, total
#   placements  PLACEMENTS PickN(PLACEMENT_CLUSTERS) placements, all Available (kept for what follows)
#   idle        Raft entries/s and leader CPU over IDLE_SECONDS, nothing happening
#   rss         resident memory of each node, the members process and the real agent
#   restart     SIGTERM every node, start them again: first write, resync, spurious writes
#   leader-kill SIGKILL the leader (restarted afterwards): first write, resync, spurious writes
#
# Results: a markdown table per scenario on stdout, and each scenario's JSON
# (`-o json`) in RESULTS (default: not kept). Everything started is stopped
# and the temp dir removed on exit (BENCH_KEEP=1 keeps it with the logs).
# NODE_LOG sets the nodes' RUST_LOG (default warn); NODE_ARGS adds flags to
# every fleet-node (e.g. NODE_ARGS="--election-timeout-ms 600" for a baseline).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/fleet.sh"

# Whether process $1 exists and has not exited: a zombie whose threads
# have all gone (they hold its port and files until then) has.
node_running() {
  local state tasks
  { read -r _ _ state _ <"/proc/$1/stat"; } 2>/dev/null || return 1
  [ "$state" != Z ] && return 0
  tasks=$(ls "/proc/$1/task" 2>/dev/null | wc -l)
  [ "$tasks" -gt 1 ]
}

# Internal: node control for the `disrupt` scenario (run by fleet-bench).
# `scale.sh --node start|term|kill|revive ID DIR` with DIR the run's temp dir
# (revive starts every node that is not running).
if [ "${1:-}" = --node ]; then
  action=$2 id=$3 dir=$4
  . "$dir/hub.env"
  pidfile=$dir/node-$id.pid
  case $action in
    start)
      RUST_LOG=${NODE_LOG:-warn} "$BIN/fleet-node" --id "$id" --listen "127.0.0.1:${P[$((id-1))]}" \
        --data-dir "$dir/node-$id" --tls-dir "$dir/pki" --peers "$PEERS" --init ${NODE_ARGS:-} \
        >/dev/null 2>>"$dir/node-$id.log" </dev/null &
      echo $! >"$pidfile" ;;
    revive)
      for i in 1 2 3; do node_running "$(cat "$dir/node-$i.pid")" || "$0" --node start "$i" "$dir"; done
      # Back to a steady hub before the next disruption: a leader, and every
      # node reachable and caught up to where the leader was. (A leader
      # killed before a revived node has caught up leaves one up-to-date
      # survivor and a lagging one that keeps standing: seconds of
      # elections that are the bench's doing, not a single fault's.)
      for _ in $(seq 1 600); do
        "$BIN/fleetctl" cluster status -o json 2>/dev/null | jq -e '
          (.members | map(select(.role == "Leader")) | first | .lastApplied) as $l
          | $l != null and (.members | length) == 3
            and all(.members[]; .reachable and .lastApplied >= $l)' >/dev/null && exit 0
        sleep 0.1
      done
      echo "the hub did not catch up within 60 s of reviving its nodes" >&2; exit 1 ;;
    term|kill)
      pid=$(cat "$pidfile")
      kill "-${action^^}" "$pid" 2>/dev/null || true
      # Gone once it is a zombie: the node was started in the background of
      # a shell that has exited, and reaping orphans is up to the machine's
      # init (about 1.7 s on the bench machine), which is not the node's time.
      for _ in $(seq 1 1000); do node_running "$pid" || exit 0; sleep 0.01; done
      echo "node $id (pid $pid) did not stop" >&2; exit 1 ;;
  esac
  exit 0
fi

cd "$here/.."
MEMBERS=${MEMBERS:-1000}
RUNS=${RUNS:-3}
HEARTBEAT=${HEARTBEAT:-10}
PICK=${PICK:-100}
PLACEMENTS=${PLACEMENTS:-1000}
PLACEMENT_CLUSTERS=${PLACEMENT_CLUSTERS:-3}
IDLE_SECONDS=${IDLE_SECONDS:-20}
START_TIMEOUT=${START_TIMEOUT:-900}
TIMEOUT=${TIMEOUT:-600}
NODE_LOG=${NODE_LOG:-warn}
NODE_ARGS=${NODE_ARGS:-}
SCENARIOS=${SCENARIOS:-"pick-n pick-all rollout placements idle rss restart leader-kill"}
fleet_prepare jq python3
fleet_tmp scale
FLEET_POLL=1
FLEET_FAILURE_LOGS="node-*.log members.log agent-0.log"

scale_cleanup() {
  local status=$? f pid
  set +e
  for f in "$TMP"/driver.pid "$TMP"/node-*.pid "$TMP"/members.pid; do
    [ -f "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null || true
  done
  for f in "$TMP"/driver.pid "$TMP"/node-*.pid "$TMP"/members.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 1 100); do node_running "$pid" || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  (exit "$status")
  fleet_cleanup
}
trap scale_cleanup EXIT

# The hub: like fleet_start_hub, but every node started through --node so
# that fleet-bench can stop and start them too.
P=($(fleet_port) $(fleet_port) $(fleet_port))
PEERS="1=127.0.0.1:${P[0]},2=127.0.0.1:${P[1]},3=127.0.0.1:${P[2]}"
export FLEET_ENDPOINTS="127.0.0.1:${P[0]},127.0.0.1:${P[1]},127.0.0.1:${P[2]}" FLEET_TLS_DIR=$TMP/pki NODE_LOG NODE_ARGS
"$BIN/fleetctl" pki init --dir "$TMP/pki" --nodes 3 >/dev/null
declare -p BIN P PEERS >"$TMP/hub.env"
node() { "$here/scale.sh" --node "$1" "$2" "$TMP"; }
for i in 1 2 3; do node start $i; done
wait_for "$START_TIMEOUT" "a hub leader" fleet_has_leader

echo "joining $MEMBERS simulated members (heartbeat every ${HEARTBEAT}s)..."
started=$SECONDS
"$BIN/fleet-bench" members --hub "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" --count "$MEMBERS" \
  --heartbeat-seconds "$HEARTBEAT" --data-dir "$TMP/members" >"$TMP/members.out" 2>"$TMP/members.log" &
echo $! >"$TMP/members.pid"
# Ready, or the members process gone (its error is in members.log).
members_done() { grep -qx "ready $MEMBERS" "$TMP/members.out" || ! node_running "$(cat "$TMP/members.pid")"; }
wait_for "$START_TIMEOUT" "$MEMBERS members ready" members_done
grep -qx "ready $MEMBERS" "$TMP/members.out" || { echo "fleet-bench members exited:" >&2; tail -n 5 "$TMP/members.log" >&2; exit 1; }
echo "$MEMBERS members joined and healthy after $((SECONDS - started)) s"
# One real agent on an embedded target, for its resident memory.
fleet_apply_members 1
fleet_start_agent 0 1h --sim-nodes 1 --sim-capacity cpu=4,memory=16Gi --sim-allocatable cpu=4,memory=16Gi
fleet_wait_members "$START_TIMEOUT" "the embedded agent Joined+Healthy" $((MEMBERS + 1))
CLUSTERS=$((MEMBERS + 1))

scale() {
  local name=$1; shift
  echo
  echo "load before $name: $(uptime | sed 's/.*load average/load average/')"
  # In the background, so that SIGINT/SIGTERM interrupt the wait and clean up at once.
  "$BIN/fleet-bench" scale --endpoints "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" --clusters "$CLUSTERS" \
    --timeout-seconds "$TIMEOUT" -o json "$@" 2>>"$TMP/driver.log" >"$TMP/$name.json" &
  echo $! >"$TMP/driver.pid"
  wait $!
  rm -f "$TMP/driver.pid"
  jq -r --arg name "$name" '"\($name) on \(.clusters) clusters, \(.runs | length) run(s)\n\n| figure | median | min | max |\n| --- | ---: | ---: | ---: |",
    (.summary | to_entries[] | "| \(.key) | \(.value.median * 10 | round / 10) | \(.value.min * 10 | round / 10) | \(.value.max * 10 | round / 10) |")' \
    "$TMP/$name.json"
  [ -z "${RESULTS:-}" ] || { mkdir -p "$RESULTS"; cp "$TMP/$name.json" "$RESULTS/$name-$MEMBERS.json"; }
}
pids() { echo "1=$(cat "$TMP/node-1.pid"),2=$(cat "$TMP/node-2.pid"),3=$(cat "$TMP/node-3.pid")"; }
# The nodes and the members process: the cores each used in a timed scenario.
busy_pids() { echo "$(pids),members=$(cat "$TMP/members.pid")"; }

for scenario in $SCENARIOS; do
  case $scenario in
    pick-n) scale pick-n --scenario pick-n --pick "$PICK" --runs "$RUNS" --pids "$(busy_pids)" ;;
    pick-all) scale pick-all --scenario pick-all --runs "$RUNS" --pids "$(busy_pids)" ;;
    rollout) scale rollout --scenario rollout --runs "$RUNS" --pids "$(busy_pids)" ;;
    placements) scale placements --scenario placements --placements "$PLACEMENTS" \
                  --placement-clusters "$PLACEMENT_CLUSTERS" --pids "$(busy_pids)" ;;
    idle) scale idle --scenario idle --idle-seconds "$IDLE_SECONDS" --runs "$RUNS" --pids "$(pids)" ;;
    rss) scale rss --scenario rss --pids \
           "$(pids),members=$(cat "$TMP/members.pid"),agent=${AGENT_PID[0]}" ;;
    restart)
      scale restart --scenario disrupt --runs "$RUNS" \
        --disrupt-cmd "for i in 1 2 3; do '$here/scale.sh' --node term \$i '$TMP'; done; for i in 1 2 3; do '$here/scale.sh' --node start \$i '$TMP'; done" ;;
    leader-kill)
      scale leader-kill --scenario disrupt --runs "$RUNS" \
        --disrupt-cmd "'$here/scale.sh' --node kill {leader} '$TMP'" \
        --recover-cmd "'$here/scale.sh' --node revive 0 '$TMP'" ;;
    *) echo "unknown scenario $scenario" >&2; exit 2 ;;
  esac
done
