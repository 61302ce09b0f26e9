#!/usr/bin/env bash
# KubeFleet's scheduler as an oracle for Fleet (docs/conformance.md): starts a
# real kube-apiserver (realkube) for KubeFleet's own hub agent (run by the
# oracle, in-process), a Fleet hub trio serving its Kubernetes API, and one
# fleet-agent per pool cluster (embedded simulated clusters of the sizes the
# oracle prints), then runs the oracle, which applies random but valid
# placement scenarios to both and compares what they schedule. Ends with the
# oracle's line
#
#   kubefleet-scheduler: S scenarios, D differences, W written down
#
# and exits non-zero when D > 0.
#
#   conformance/kubefleet-scheduler.sh [--seed N] [--scenarios M] [--only I] [--verbose]
#
# Builds what it needs first (cargo build of the three binaries, realkube and
# the oracle with Go 1.26+); set ORACLE_NO_BUILD=1 to use what is built.
# Everything runs on loopback in a temp dir, removed at the end (kept with
# ORACLE_KEEP=1, for the logs).
#
# A thin front of conformance/oracle.sh, which both oracles share.
exec "$(dirname "$0")/oracle.sh" kubefleet-scheduler kubefleet "$@"
