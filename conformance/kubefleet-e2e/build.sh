#!/usr/bin/env bash
# Builds KubeFleet's own end-to-end suite, unmodified, from the release pinned
# in go.mod, as $1 (default ../../target/kubefleet-e2e/kubefleet-e2e), and
# beside it, in the same directory D:
#   D/kubefleet/test/                         the suite's sources and manifests
#                                             (it reads them by relative path)
#   D/kubefleet/hack/tools/bin/kubectl-fleet  KubeFleet's kubectl plugin, where
#                                             the suite looks for it
#   D/ginkgo                                  the Ginkgo CLI of the suite's own
#                                             Ginkgo release, for parallel runs
#   D/kubefleet/test/e2e/kubefleet-e2e.test   a link to the suite (Ginkgo runs a
#                                             compiled suite from its directory)
# Run the suite from D/kubefleet/test/e2e.
#
# go.sum pins the suite's test-only dependencies too (added with
# `go get -t github.com/kubefleet-dev/kubefleet/test/e2e@VERSION`); `go mod
# tidy` would drop them, as no package of this module imports the suite.
set -euo pipefail
cd "$(dirname "$0")"
binary=${1:-../../target/kubefleet-e2e/kubefleet-e2e}
out=$(dirname "$binary")
command -v go >/dev/null || { echo "conformance/kubefleet-e2e/build.sh: the Go toolchain is not installed (need go 1.26 or newer)" >&2; exit 1; }
module=github.com/kubefleet-dev/kubefleet
src=$(go list -m -f '{{.Dir}}' "$module")
if [ -z "$src" ] || [ ! -d "$src/test/e2e" ]; then
  go mod download "$module"
  src=$(go list -m -f '{{.Dir}}' "$module")
fi
mkdir -p "$out/kubefleet/hack/tools/bin"
go test -c -o "$binary" "$module/test/e2e"
go build -o "$out/kubefleet/hack/tools/bin/kubectl-fleet" "$module/tools/fleet"
go build -o "$out/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
# The sources are copied once per pinned release: a suite already running
# from this directory (the whole suite takes most of an hour) reads its
# manifests by relative path, so a rebuild must not take them away under it.
# A new release's copy is made aside and swapped in; the module cache is
# read-only, so the copy is made writable for the next swap to remove.
if [ "$(cat "$out/kubefleet/test/.source" 2>/dev/null)" != "$src" ]; then
  rm -rf "$out/kubefleet/test.new"
  cp -r "$src/test" "$out/kubefleet/test.new"
  chmod -R u+w "$out/kubefleet/test.new"
  echo "$src" >"$out/kubefleet/test.new/.source"
  rm -rf "$out/kubefleet/test"
  mv "$out/kubefleet/test.new" "$out/kubefleet/test"
fi
ln -sf "$(cd "$out" && pwd)/$(basename "$binary")" "$out/kubefleet/test/e2e/kubefleet-e2e.test"
