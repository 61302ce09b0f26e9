//go:build tools

// Package tools pins the KubeFleet release whose own end-to-end suite and
// kubectl-fleet plugin the conformance harness builds.
package tools

import (
	_ "github.com/kubefleet-dev/kubefleet/tools/fleet"
)
