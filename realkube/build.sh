#!/usr/bin/env bash
# Builds realkube into $1 (default ../target/realkube/realkube), stamping the
# pinned Kubernetes release into the binary the way Kubernetes' own build
# does, so /version and the API server's `gitVersion` name the real release.
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-../target/realkube/realkube}
command -v go >/dev/null || { echo "realkube/build.sh: the Go toolchain is not installed (need go 1.26 or newer)" >&2; exit 1; }
version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=${version#v1.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
go build -o "$out" -ldflags "-X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean" .
