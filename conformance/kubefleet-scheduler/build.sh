#!/usr/bin/env bash
# Builds the KubeFleet scheduler oracle into $1 (default
# ../../target/kubefleet-scheduler/kubefleet-scheduler) and copies KubeFleet's
# CRD files, from the github.com/kubefleet-dev/kubefleet module pinned in
# go.mod, into crds/ beside it (the program installs them on the KubeFleet
# side's API server).
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-../../target/kubefleet-scheduler/kubefleet-scheduler}
command -v go >/dev/null || { echo "conformance/kubefleet-scheduler/build.sh: the Go toolchain is not installed (need go 1.26 or newer)" >&2; exit 1; }
mkdir -p "$(dirname "$out")/crds"
go build -o "$out" .
src=$(go list -m -f '{{.Dir}}' github.com/kubefleet-dev/kubefleet)
rm -f "$(dirname "$out")"/crds/*.yaml
cp -f "$src"/config/crd/bases/*.yaml "$(dirname "$out")/crds/"
chmod u+w "$(dirname "$out")"/crds/*.yaml
