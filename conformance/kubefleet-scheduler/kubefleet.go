package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clusterinventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	clusterv1beta1 "github.com/kubefleet-dev/kubefleet/apis/cluster/v1beta1"
	placementv1alpha1 "github.com/kubefleet-dev/kubefleet/apis/placement/v1alpha1"
	placementv1beta1 "github.com/kubefleet-dev/kubefleet/apis/placement/v1beta1"
	"github.com/kubefleet-dev/kubefleet/cmd/hubagent/options"
	"github.com/kubefleet-dev/kubefleet/cmd/hubagent/workload"
)

// installCRDs creates (or keeps) every CRD of KubeFleet's config/crd/bases
// (copied next to the binary by build.sh, under crds/) on the KubeFleet
// side's API server and waits until each is Established: the hub agent
// checks that all its kinds are installed before it starts.
func installCRDs(ctx context.Context, config *rest.Config, dir string) error {
	client, err := apiextensions.NewForConfig(config)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no KubeFleet CRD files in %s (build.sh copies them next to the binary)", dir)
	}
	sort.Strings(files)
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(text, crd); err != nil {
			return fmt.Errorf("CRD %s: %w", file, err)
		}
		_, err = client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
	}
	for _, file := range files {
		text, _ := os.ReadFile(file)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(text, crd); err != nil {
			return err
		}
		err = poll(ctx, 60*time.Second, "CRD "+crd.Name+" Established", func() (bool, string, error) {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, "", nil
				}
			}
			return false, "not Established", nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// startHubAgent runs KubeFleet's hub agent in this process as its
// cmd/hubagent wires it: a controller manager with the hub agent's scheme
// and workload.SetupControllers (the placement controller that makes the
// policy snapshots, the scheduler with its default profile, their
// watchers, rollout, work generator). Left out: webhooks, leader election,
// metrics and health endpoints, and the MemberCluster controller (the
// oracle writes MemberCluster status itself, as KubeFleet's e2e tests do).
func startHubAgent(ctx context.Context, config *rest.Config) (*agentCache, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(placementv1beta1.AddToScheme(scheme))
	utilruntime.Must(clusterv1beta1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(placementv1alpha1.AddToScheme(scheme))
	utilruntime.Must(clusterinventory.AddToScheme(scheme))

	opts := options.NewOptions()
	// Some of the hub agent's flags register on the process's flag set;
	// this one takes the rest, so that every option has its default.
	flags := flag.NewFlagSet("hubagent", flag.ContinueOnError)
	opts.AddFlags(flags)
	if err := flags.Parse(nil); err != nil {
		return nil, err
	}
	opts.EnableWebhook = false
	opts.LeaderElection.LeaderElect = false
	if errs := opts.Validate(); len(errs) != 0 {
		return nil, fmt.Errorf("the hub agent's options: %v", errs.ToAggregate())
	}
	hubConfig := rest.CopyConfig(config)
	hubConfig.QPS, hubConfig.Burst = float32(opts.HubQPS), opts.HubBurst
	mgr, err := ctrl.NewManager(hubConfig, ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{
			SyncPeriod:       &opts.ResyncPeriod.Duration,
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		HealthProbeBindAddress: "0",
		Metrics:                metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return nil, fmt.Errorf("the hub agent's manager: %w", err)
	}
	var wg sync.WaitGroup
	if err := workload.SetupControllers(ctx, &wg, mgr, hubConfig, opts); err != nil {
		return nil, fmt.Errorf("the hub agent's controllers: %w", err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "kubefleet-scheduler: KubeFleet's hub agent stopped:", err)
			os.Exit(2)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the hub agent's cache did not sync")
	}
	return &agentCache{reader: mgr.GetCache()}, nil
}

// agentCache is the hub agent's manager cache, which its scheduler reads
// the clusters from.
type agentCache struct {
	reader client.Reader
}

// caughtUp waits until the cache holds each MemberCluster at the
// resourceVersion written or a later one (name → version).
func (c *agentCache) caughtUp(ctx context.Context, written map[string]string) error {
	return poll(ctx, 60*time.Second, "the hub agent's cache to catch up", func() (bool, string, error) {
		for name, version := range written {
			mc := &clusterv1beta1.MemberCluster{}
			if err := c.reader.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
				return false, err.Error(), nil
			}
			// resourceVersions are etcd's revisions: a later write (the
			// hub agent's own) shows a larger one.
			have, _ := strconv.ParseInt(mc.ResourceVersion, 10, 64)
			want, _ := strconv.ParseInt(version, 10, 64)
			if have < want {
				return false, fmt.Sprintf("MemberCluster %s at %s, not %s", name, mc.ResourceVersion, version), nil
			}
		}
		return true, "", nil
	})
}

// poll calls probe until it says done, every 50 ms, failing after timeout
// with what it last saw.
func poll(ctx context.Context, timeout time.Duration, what string, probe func() (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		done, seen, err := probe()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		last = seen
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s; last seen: %s", timeout, what, strings.TrimSpace(last))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
