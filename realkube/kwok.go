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
	"sigs.k8s.io/yaml"
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

// imagePullFailureStage holds back Pods with an image the cluster cannot
// pull, as a kubelet does: Pending, not Ready, each container waiting with
// ErrImagePull. Its image list is filled in by [stagesFor].
const imagePullFailureStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-image-pull-failure
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
    - key: '.status.containerStatuses.[].state.waiting.reason'
      operator: 'NotIn'
      values:
      - 'ErrImagePull'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          waiting:
            reason: ErrImagePull
            message: {{ printf "failed to pull image %q: not found" .image | Quote }}
      {{ end }}
      phase: Pending
`

// stagesFor is KWOK's default stages, and, when some images are listed as
// unpullable, Pods using one of them are kept from becoming Ready
// (pod-ready skips them; imagePullFailureStage reports the pull failure).
func stagesFor(unpullable []string) ([]string, error) {
	if len(unpullable) == 0 {
		return kwokStages, nil
	}
	out := make([]string, 0, len(kwokStages)+1)
	for _, stage := range append(append([]string{}, kwokStages...), imagePullFailureStage) {
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(stage), &doc); err != nil {
			return nil, fmt.Errorf("reading a KWOK stage: %w", err)
		}
		name, _ := doc["metadata"].(map[string]any)["name"].(string)
		operator := ""
		switch name {
		case "pod-ready":
			operator = "NotIn"
		case "pod-image-pull-failure":
			operator = "In"
		}
		if operator != "" {
			selector := doc["spec"].(map[string]any)["selector"].(map[string]any)
			expressions, _ := selector["matchExpressions"].([]any)
			expression := map[string]any{"key": ".spec.containers.[].image", "operator": operator, "values": unpullable}
			selector["matchExpressions"] = append(expressions, expression)
		}
		text, err := yaml.Marshal(doc)
		if err != nil {
			return nil, err
		}
		out = append(out, string(text))
	}
	return out, nil
}

// kwokArgsMu guards the swap of os.Args below: KWOK reads its --config flag
// from the process's arguments.
var kwokArgsMu sync.Mutex

// runKWOK runs KWOK's controller as its own binary would, managing every Node
// of the cluster (they are all fake).
func runKWOK(ctx context.Context, dataDir, kubeconfig string, unpullable []string) error {
	configPath := filepath.Join(dataDir, "kwok.yaml")
	stages, err := stagesFor(unpullable)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(configPath, []byte(strings.Join(stages, "\n---\n")), 0o600); err != nil {
		return err
	}
	kwokArgsMu.Lock()
	saved := os.Args
	os.Args = []string{"kwok", "--config=" + configPath}
	flags := pflag.NewFlagSet("kwok-config", pflag.ContinueOnError)
	ctx, err = kwokconfig.InitFlags(ctx, flags)
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
