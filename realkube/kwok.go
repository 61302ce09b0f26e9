package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	kwokconfig "sigs.k8s.io/kwok/pkg/config"
	kwokcmd "sigs.k8s.io/kwok/pkg/kwok/cmd"
)

// kwokStages are KWOK's own default stages, from its pinned module: Nodes
// become Ready and renew their Leases; Pods become Ready, Complete when all
// their containers are done (Jobs), and go away when deleted.
var kwokStages = []string{
	nodefast.DefaultNodeInit,
	nodeheartbeat.DefaultNodeHeartbeatWithLease,
	podfast.DefaultPodReady,
	podfast.DefaultPodComplete,
	podfast.DefaultPodDelete,
}

// kwokArgsMu guards the swap of os.Args below: KWOK reads its --config flag
// from the process's arguments.
var kwokArgsMu sync.Mutex

// runKWOK runs KWOK's controller as its own binary would, managing every Node
// of the cluster (they are all fake).
func runKWOK(ctx context.Context, dataDir, kubeconfig string) error {
	configPath := filepath.Join(dataDir, "kwok.yaml")
	if err := writeFileAtomic(configPath, []byte(strings.Join(kwokStages, "\n---\n")), 0o600); err != nil {
		return err
	}
	kwokArgsMu.Lock()
	saved := os.Args
	os.Args = []string{"kwok", "--config=" + configPath}
	flags := pflag.NewFlagSet("kwok-config", pflag.ContinueOnError)
	ctx, err := kwokconfig.InitFlags(ctx, flags)
	os.Args = saved
	kwokArgsMu.Unlock()
	if err != nil {
		return fmt.Errorf("loading stages: %w", err)
	}

	// cobra merges pflag.CommandLine into a root command's flags, and the
	// Kubernetes packages register their own --version there; KWOK's
	// command defines a different one.
	pflag.CommandLine = pflag.NewFlagSet("kwok", pflag.ContinueOnError)
	cmd := kwokcmd.NewCommand(ctx)
	cmd.SetArgs([]string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=true",
		"--node-port=0",
		"--server-address=",
		"--cidr=10.244.0.1/16",
		"--node-ip=10.240.0.1",
		"--node-lease-duration-seconds=40",
	})
	return cmd.ExecuteContext(ctx)
}
