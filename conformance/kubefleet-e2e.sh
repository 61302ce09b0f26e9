#!/usr/bin/env bash
# KubeFleet's own end-to-end suite (the release pinned in
# conformance/kubefleet-e2e/go.mod, compiled unmodified) against Fleet: a hub
# trio serving the Kubernetes API as context kind-hub, three real clusters
# (realkube) whose fleet-agents joined as kind-cluster-1..3 with the labels
# the suite expects. Specs listed in conformance/kubefleet-e2e/not-applicable.txt
# are skipped and counted as not applicable.
#
#   conformance/kubefleet-e2e.sh                 # the whole suite (hours, serially)
#   conformance/kubefleet-e2e.sh 'FOCUS REGEX'   # Ginkgo's focus
#   KUBEFLEET_E2E_PROCS=4 conformance/kubefleet-e2e.sh   # 4 Ginkgo processes
#
# Ends with: kubefleet-e2e: P passed, F failed, N not applicable (T s).
# The suite's own output goes to target/kubefleet-e2e/kubefleet-e2e.log.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
command -v go >/dev/null || { echo "conformance/kubefleet-e2e.sh: the Go toolchain is missing (go 1.26 or newer)" >&2; exit 1; }
command -v kubectl >/dev/null || { echo "conformance/kubefleet-e2e.sh: kubectl is missing (tests/run.sh installs it)" >&2; exit 1; }
cargo build --workspace --bins -q
target=${CARGO_TARGET_DIR:-target}
mkdir -p "$target/kubefleet-e2e"
args=(--log "$target/kubefleet-e2e/kubefleet-e2e.log")
[ $# -eq 0 ] || args+=(--focus "$1")
args+=(--procs "${KUBEFLEET_E2E_PROCS:-1}")
exec "$target/debug/kubefleet-e2e" "${args[@]}"
