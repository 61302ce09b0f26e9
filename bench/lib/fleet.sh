# Shared steps of the loopback benchmarks (agents.sh, placements.sh,
# rollout.sh): build or find the release binaries, a temp dir removed on
# exit together with everything started, a 3-node hub, MemberClusters and
# their embedded agents. Sourced, not run; defines functions only.
#
# Globals the functions set: BIN, TMP, PIDS (every process started),
# NODE_PID[1..3], AGENT_PID[n], P (the hub's ports), PEERS, and exported
# FLEET_ENDPOINTS / FLEET_TLS_DIR for fleetctl.
# Globals the script may set: FLEET_POLL (seconds between polls of wait_for,
# default 0.2), FLEET_FAILURE_LOGS (globs under TMP whose last lines a failed
# run prints, default "*.log").

FLEET_POLL=0.2
FLEET_FAILURE_LOGS="*.log"
PIDS=()
NODE_PID=()
AGENT_PID=()

# fleet_prepare TOOL...: builds the release binaries (unless BENCH_SKIP_BUILD=1),
# installs the missing TOOLs with apt, and checks the binaries are there.
# Run from the workspace root.
fleet_prepare() {
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release
  [ "${BENCH_SKIP_BUILD:-0}" = 1 ] || cargo build --release -q --bins
  local tool b
  for tool in "$@"; do command -v "$tool" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$tool" >/dev/null; }; done
  for b in fleet-node fleet-agent fleetctl fleet-bench; do
    [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build with cargo build --release --bins)" >&2; exit 1; }
  done
}

# fleet_tmp NAME: makes TMP (fleet-NAME.XXXXXX under BENCH_TMP or /tmp) and
# traps EXIT to stop every process in PIDS and remove TMP (BENCH_KEEP=1 keeps
# it); a failed run prints the last lines of FLEET_FAILURE_LOGS.
fleet_tmp() {
  TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/fleet-$1.XXXXXX")
  trap fleet_cleanup EXIT
  trap 'exit 130' INT TERM
}

fleet_cleanup() {
  local status=$? p glob globs logs=()
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${BENCH_KEEP:-0}" = 1 ] || [ "$status" != 0 ]; then
    if [ "$status" != 0 ]; then
      read -ra globs <<<"$FLEET_FAILURE_LOGS"
      for glob in "${globs[@]}"; do logs+=("$TMP"/$glob); done
      echo "failed (exit $status); last log lines:" >&2
      tail -n 5 "${logs[@]}" >&2 2>/dev/null || true
    fi
    [ "${BENCH_KEEP:-0}" = 1 ] && echo "logs kept in $TMP" >&2
  fi
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$TMP"
}

# wait_for SECONDS WHAT CMD...: polls CMD every FLEET_POLL s; fails after SECONDS.
wait_for() {
  local limit=$1 what=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then echo "timed out after ${limit}s waiting for $what" >&2; return 1; fi
    sleep "$FLEET_POLL"
  done
}

# rss_mib PID: resident memory of PID in MiB.
rss_mib() { awk '/VmRSS/ {printf "%d", $2 / 1024}' "/proc/$1/status"; }

fleet_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# fleet_start_hub SECONDS [RUST_LOG]: a fresh PKI and a 3-node hub on free
# loopback ports (RUST_LOG, if given, for the nodes); waits up to SECONDS for
# a leader.
fleet_start_hub() {
  local limit=$1 log=${2:-} i
  P=($(fleet_port) $(fleet_port) $(fleet_port))
  PEERS="1=127.0.0.1:${P[0]},2=127.0.0.1:${P[1]},3=127.0.0.1:${P[2]}"
  export FLEET_ENDPOINTS="127.0.0.1:${P[0]},127.0.0.1:${P[1]},127.0.0.1:${P[2]}" FLEET_TLS_DIR=$TMP/pki
  "$BIN/fleetctl" pki init --dir "$TMP/pki" --nodes 3 >/dev/null
  for i in 1 2 3; do
    env ${log:+"RUST_LOG=$log"} "$BIN/fleet-node" --id $i --listen "127.0.0.1:${P[$((i-1))]}" --data-dir "$TMP/node-$i" \
      --tls-dir "$TMP/pki" --peers "$PEERS" --init 2>"$TMP/node-$i.log" &
    PIDS+=($!); NODE_PID[$i]=$!
  done
  wait_for "$limit" "a hub leader" fleet_has_leader
}

fleet_has_leader() { "$BIN/fleetctl" cluster status -o json | jq -e '.leader != null'; }

# fleet_apply_members COUNT [REGION...]: MemberClusters m-0 … m-(COUNT-1),
# labelled bench=true (and region=REGION round-robin when REGIONs are given),
# heartbeat period 10 s.
fleet_apply_members() {
  local count=$1 n labels; shift
  local regions=("$@")
  for n in $(seq 0 $((count-1))); do
    labels='bench: "true"'
    [ ${#regions[@]} = 0 ] || labels+=", region: ${regions[$((n % ${#regions[@]}))]}"
    printf -- '---\napiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata: {name: m-%d, labels: {%s}}\nspec: {heartbeatPeriodSeconds: 10}\n' \
      "$n" "$labels"
  done | "$BIN/fleetctl" apply -f - >/dev/null
}

# fleet_start_agent N TTL [FLAG...]: a join token for m-N (valid TTL) and
# its agent (RUST_LOG=warn, ready delay 0s, extra FLAGs), logging to
# TMP/agent-N.log.
fleet_start_agent() {
  local n=$1 ttl=$2 token fp; shift 2
  { read -r token; read -r fp; } < <("$BIN/fleetctl" token create --cluster "m-$n" --ttl "$ttl" 2>/dev/null)
  RUST_LOG=warn "$BIN/fleet-agent" --cluster "m-$n" --hub "$FLEET_ENDPOINTS" --data-dir "$TMP/agent-$n" \
    --token "$token" --ca-fingerprint "$fp" --sim-ready-delay 0s "$@" 2>"$TMP/agent-$n.log" &
  PIDS+=($!); AGENT_PID[$n]=$!
}

# fleet_wait_members SECONDS WHAT COUNT [JQ_CONDITION]: waits up to SECONDS
# until COUNT MemberClusters are Joined and Healthy (and meet JQ_CONDITION).
fleet_wait_members() {
  local limit=$1 what=$2
  wait_for "$limit" "$what" fleet_members_ready "${@:3}"
}

fleet_members_ready() {
  local count=$1 extra=${2:-true} n
  n=$("$BIN/fleetctl" get mc -o json | jq "[.items[] | select(
      (.status.conditions // [] | any(.type==\"Joined\" and .status==\"True\")) and
      (.status.conditions // [] | any(.type==\"Healthy\" and .status==\"True\")) and
      ($extra))] | length")
  [ "$n" -ge "$count" ]
}

# fleet_start_churning_members COUNT CHURN TIMEOUT: COUNT simulated members
# in one `fleet-bench members` process (heartbeat 10 s), whose Deployments'
# status and drift checks change every CHURN; waits up to TIMEOUT seconds
# for all to join. Logs to TMP/members.log.
fleet_start_churning_members() {
  local count=$1 churn=$2 limit=$3
  echo "joining $count simulated members (Deployment status changing every $churn)..."
  "$BIN/fleet-bench" members --hub "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" --count "$count" \
    --heartbeat-seconds 10 --status-churn "$churn" --drift-check-interval "$churn" --data-dir "$TMP/members" \
    >"$TMP/members.out" 2>"$TMP/members.log" &
  PIDS+=($!)
  wait_for "$limit" "$count members ready" grep -qx "ready $count" "$TMP/members.out"
}
