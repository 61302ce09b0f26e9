//go:build tools

// Package tools pins the KubeFleet release whose own end-to-end suite and
// kubectl-fleet plugin the conformance harness builds, and the Ginkgo CLI
// (the suite's own Ginkgo release) that runs the suite in parallel.
package tools

import (
	_ "github.com/kubefleet-dev/kubefleet/tools/fleet"
	_ "github.com/onsi/ginkgo/v2/ginkgo"
)
