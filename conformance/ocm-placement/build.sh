#!/usr/bin/env bash
# Builds the OCM placement oracle into $1 (default
# ../../target/ocm-placement/ocm-placement) and copies OCM's CRD files, from
# the open-cluster-management.io/api module pinned in go.mod, into crds/
# beside it (the program installs them on the OCM side's API server).
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-../../target/ocm-placement/ocm-placement}
command -v go >/dev/null || { echo "conformance/ocm-placement/build.sh: the Go toolchain is not installed (need go 1.26 or newer)" >&2; exit 1; }
mkdir -p "$(dirname "$out")/crds"
go build -o "$out" .
api=$(go list -m -f '{{.Dir}}' open-cluster-management.io/api)
for dir in cluster/v1 cluster/v1beta1 cluster/v1beta2 cluster/v1alpha1; do
  cp -f "$api/$dir"/*.crd.yaml "$(dirname "$out")/crds/"
done
chmod u+w "$(dirname "$out")"/crds/*.yaml
