#!/usr/bin/env bash
# What authorization costs end to end: a 3-node hub, then `fleet-bench
# rbac-cost` (writes and lists as admin and as a tenant bound to `edit` among
# 200 other RoleBindings, ROUNDS short rounds alternating who goes first),
# then the same with admin on both sides: the control, whose spread is the
# noise floor of this machine.
#
#   bench/rbac-cost.sh                 # 20 rounds of 3 s
#   ROUNDS=10 ROUND_SECONDS=10 bench/rbac-cost.sh
#
# Uses the release binaries (built unless BENCH_SKIP_BUILD=1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/fleet.sh"
cd "$here/.."
ROUNDS=${ROUNDS:-20}
ROUND_SECONDS=${ROUND_SECONDS:-3}
fleet_prepare jq python3
fleet_tmp rbac-cost
FLEET_POLL=1

fleet_start_hub 120 warn
"$BIN/fleetctl" pki issue-user --dir "$TMP/pki" --name fleet-bench-tenant >/dev/null
cost() {
  "$BIN/fleet-bench" rbac-cost --endpoints "$FLEET_ENDPOINTS" --tls-dir "$TMP/pki" \
    --seconds "$ROUND_SECONDS" --rounds "$ROUNDS" "$@"
}
echo "load $(uptime | sed 's/.*load average: //')"
cost
echo
echo "control (admin on both sides): load $(uptime | sed 's/.*load average: //')"
cost --user admin
