package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/openshift/library-go/pkg/controller/controllercmd"
	"github.com/openshift/library-go/pkg/operator/events"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	placementcontrollers "open-cluster-management.io/ocm/pkg/placement/controllers"
)

// crdFiles are the OCM CRDs the placement controller reads and writes,
// as files of open-cluster-management.io/api (copied next to the binary
// by build.sh, under crds/).
var crdFiles = []string{
	"0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml",
	"0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml",
	"0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml",
	"0000_02_clusters.open-cluster-management.io_placements.crd.yaml",
	"0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml",
	"0000_05_clusters.open-cluster-management.io_addonplacementscores.crd.yaml",
}

// installCRDs creates (or keeps) OCM's CRDs on the OCM side's API server
// and waits until each is Established.
func installCRDs(ctx context.Context, config *rest.Config, dir string) error {
	client, err := apiextensions.NewForConfig(config)
	if err != nil {
		return err
	}
	for _, file := range crdFiles {
		text, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return fmt.Errorf("OCM's CRD %s: %w (build.sh copies them next to the binary)", file, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(text, crd); err != nil {
			return fmt.Errorf("CRD %s: %w", file, err)
		}
		_, err = client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
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

// ocmCaches are the informer caches OCM's controller schedules from (the
// same shared informers), read to know when it has seen a scenario.
type ocmCaches struct {
	stores map[schema.GroupVersionResource]cache.Store
}

// startOCM runs OCM's placement controller manager in this process, wired
// as OCM's `placement controller` command wires it, against the OCM side,
// with an informer factory whose caches the oracle can read.
func startOCM(ctx context.Context, config *rest.Config) (*ocmCaches, error) {
	kubeClient, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	clusterClient, err := clusterclient.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	informers := clusterinformers.NewSharedInformerFactory(clusterClient, 10*time.Minute)
	cluster := informers.Cluster()
	caches := &ocmCaches{stores: map[schema.GroupVersionResource]cache.Store{
		gvrCluster:    cluster.V1().ManagedClusters().Informer().GetStore(),
		gvrSet:        cluster.V1beta2().ManagedClusterSets().Informer().GetStore(),
		gvrBinding:    cluster.V1beta2().ManagedClusterSetBindings().Informer().GetStore(),
		gvrAddOnScore: cluster.V1alpha1().AddOnPlacementScores().Informer().GetStore(),
		gvrDecision:   cluster.V1beta1().PlacementDecisions().Informer().GetStore(),
	}}
	// The controller's own (library-go) recorder only logs; the
	// Placement events go through the events.k8s.io recorder OCM makes.
	controllerContext := &controllercmd.ControllerContext{
		KubeConfig:    config,
		EventRecorder: events.NewLoggingEventRecorder("placement-controller", clock.RealClock{}),
		Clock:         clock.RealClock{},
	}
	go func() {
		err := placementcontrollers.RunControllerManagerWithInformers(ctx, controllerContext, kubeClient, clusterClient, informers)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ocm-placement: OCM's placement controller stopped:", err)
			os.Exit(2)
		}
	}()
	return caches, nil
}

// written is one object as last written: where, and its resourceVersion
// ("" once deleted).
type written struct {
	gvr             schema.GroupVersionResource
	key             string
	resourceVersion string
}

// caughtUp waits until OCM's caches hold every written object at the
// version written (or not at all, once deleted), and no
// PlacementDecision the API server does not have (nor miss one it has):
// then the controller schedules from what the scenario set up.
func (c *ocmCaches) caughtUp(ctx context.Context, ocm *side, writes []written) error {
	return poll(ctx, settleTimeout, "OCM's controller caches to catch up", func() (bool, string, error) {
		for _, w := range writes {
			store, ok := c.stores[w.gvr]
			if !ok {
				continue
			}
			item, exists, err := store.GetByKey(w.key)
			if err != nil {
				return false, "", err
			}
			if w.resourceVersion == "" {
				if exists {
					return false, w.key + " still cached", nil
				}
				continue
			}
			accessor, ok := item.(metav1.Object)
			if !exists || !ok || accessor.GetResourceVersion() != w.resourceVersion {
				return false, fmt.Sprintf("%s %s not at %s", w.gvr.Resource, w.key, w.resourceVersion), nil
			}
		}
		pages, err := ocm.list(ctx, gvrDecision, "", "")
		if err != nil {
			return false, "", err
		}
		cached := map[string]string{}
		for _, item := range c.stores[gvrDecision].List() {
			if accessor, ok := item.(metav1.Object); ok {
				cached[accessor.GetNamespace()+"/"+accessor.GetName()] = accessor.GetResourceVersion()
			}
		}
		for _, p := range pages {
			key := p.GetNamespace() + "/" + p.GetName()
			if cached[key] != p.GetResourceVersion() {
				return false, "decision " + key + " not cached at its version", nil
			}
			delete(cached, key)
		}
		return len(cached) == 0, fmt.Sprintf("%d decisions cached that are gone", len(cached)), nil
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
			return fmt.Errorf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
