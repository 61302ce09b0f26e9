package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The kinds a scenario writes or reads, by resource.
var (
	gvrNamespace = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrMember    = schema.GroupVersionResource{Group: clusterGroup, Version: "v1beta1", Resource: "memberclusters"}
	gvrConfigMap = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// placementKind is where a placement, its policy snapshots and bindings
// live, by the placement's kind: a ClusterResourcePlacement's are
// cluster-scoped, a ResourcePlacement's in its namespace.
type placementKind struct {
	placement, snapshot, binding schema.GroupVersionResource
	namespace                    string
	// scheduled is the placement's scheduling condition.
	scheduled string
}

func kindOf(p obj) placementKind {
	gvr := func(resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: placementGroup, Version: "v1beta1", Resource: resource}
	}
	if p["kind"] == "ResourcePlacement" {
		m, _ := p["metadata"].(obj)
		namespace, _ := m["namespace"].(string)
		return placementKind{gvr("resourceplacements"), gvr("schedulingpolicysnapshots"), gvr("resourcebindings"), namespace, "ResourcePlacementScheduled"}
	}
	return placementKind{gvr("clusterresourceplacements"), gvr("clusterschedulingpolicysnapshots"), gvr("clusterresourcebindings"), "", "ClusterResourcePlacementScheduled"}
}

const (
	clusterGroup   = "cluster.kubernetes-fleet.io"
	placementGroup = "placement.kubernetes-fleet.io"
	parentLabel    = "kubernetes-fleet.io/parent-CRP"
	latestLabel    = "kubernetes-fleet.io/is-latest-snapshot"
)

// side is one implementation under comparison (KubeFleet's hub agent on a
// kube-apiserver, or Fleet), reached through its Kubernetes API.
type side struct {
	name   string
	client dynamic.Interface
}

// newSide connects to the API server of a kubeconfig (its current context).
func newSide(name, kubeconfig string) (*side, *rest.Config, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: kubeconfig %s: %w", name, kubeconfig, err)
	}
	config.QPS = 500
	config.Burst = 1000
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return &side{name: name, client: client}, config, nil
}

func (s *side) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return s.client.Resource(gvr)
	}
	return s.client.Resource(gvr).Namespace(namespace)
}

// create creates an object and, when it carries a status, writes that
// status through the status subresource.
func (s *side) create(ctx context.Context, gvr schema.GroupVersionResource, object map[string]interface{}) error {
	u := &unstructured.Unstructured{Object: deepCopy(object)}
	status, hasStatus := u.Object["status"]
	created, err := s.resource(gvr, u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("%s: create %s %s: %w", s.name, gvr.Resource, u.GetName(), err)
	}
	if !hasStatus {
		return nil
	}
	// Retried on conflicts: a controller may write the object meanwhile.
	for attempt := 0; ; attempt++ {
		created.Object["status"] = status
		_, err := s.resource(gvr, u.GetNamespace()).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt > 20 {
			return fmt.Errorf("%s: status of %s %s: %w", s.name, gvr.Resource, u.GetName(), err)
		}
		if created, err = s.resource(gvr, u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{}); err != nil {
			return fmt.Errorf("%s: get %s %s: %w", s.name, gvr.Resource, u.GetName(), err)
		}
	}
}

// ensureNamespace creates a namespace unless it exists.
func (s *side) ensureNamespace(ctx context.Context, name string) error {
	ns := map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": name}}
	_, err := s.resource(gvrNamespace, "").Create(ctx, &unstructured.Unstructured{Object: ns}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%s: create namespace %s: %w", s.name, name, err)
	}
	return nil
}

// get reads one object; nil when it does not exist.
func (s *side) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	u, err := s.resource(gvr, namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: get %s %s/%s: %w", s.name, gvr.Resource, namespace, name, err)
	}
	return u, nil
}

// list lists objects (in a namespace, if given) with a label selector.
func (s *side) list(ctx context.Context, gvr schema.GroupVersionResource, namespace, selector string) ([]unstructured.Unstructured, error) {
	l, err := s.resource(gvr, namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("%s: list %s in %q: %w", s.name, gvr.Resource, namespace, err)
	}
	return l.Items, nil
}

// remove deletes an object (a missing one is fine).
func (s *side) remove(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error {
	err := s.resource(gvr, namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s: delete %s %s/%s: %w", s.name, gvr.Resource, namespace, name, err)
	}
	return nil
}

// setMember replaces a MemberCluster's labels and taints (retrying on
// conflicts), keeping the labels whose keys `keep` accepts; returns the
// resourceVersion written.
func (s *side) setMember(ctx context.Context, name string, labels map[string]string, taints []interface{}, keep func(string) bool) (string, error) {
	for attempt := 0; ; attempt++ {
		u, err := s.get(ctx, gvrMember, "", name)
		if err != nil {
			return "", err
		}
		if u == nil {
			return "", fmt.Errorf("%s: MemberCluster %s does not exist", s.name, name)
		}
		merged := map[string]string{}
		for k, v := range u.GetLabels() {
			if keep(k) {
				merged[k] = v
			}
		}
		for k, v := range labels {
			merged[k] = v
		}
		u.SetLabels(merged)
		spec, _ := u.Object["spec"].(map[string]interface{})
		if spec == nil {
			spec = map[string]interface{}{}
		}
		if len(taints) == 0 {
			delete(spec, "taints")
		} else {
			spec["taints"] = deepCopyValue(taints)
		}
		u.Object["spec"] = spec
		updated, err := s.resource(gvrMember, "").Update(ctx, u, metav1.UpdateOptions{})
		if err == nil {
			return updated.GetResourceVersion(), nil
		}
		if !apierrors.IsConflict(err) || attempt > 20 {
			return "", fmt.Errorf("%s: update MemberCluster %s: %w", s.name, name, err)
		}
	}
}

// scale sets a placement's policy.numberOfClusters (retrying on conflicts).
func (s *side) scale(ctx context.Context, p obj, clusters int64) error {
	return s.updatePlacement(ctx, p, func(u *unstructured.Unstructured) error {
		return unstructured.SetNestedField(u.Object, clusters, "spec", "policy", "numberOfClusters")
	})
}

// setPolicy replaces a placement's policy (retrying on conflicts).
func (s *side) setPolicy(ctx context.Context, p obj, policy obj) error {
	return s.updatePlacement(ctx, p, func(u *unstructured.Unstructured) error {
		return unstructured.SetNestedField(u.Object, deepCopy(policy), "spec", "policy")
	})
}

// updatePlacement changes a placement with `change` and writes it back,
// retrying on conflicts.
func (s *side) updatePlacement(ctx context.Context, p obj, change func(*unstructured.Unstructured) error) error {
	k, name := kindOf(p), name(p)
	for attempt := 0; ; attempt++ {
		u, err := s.get(ctx, k.placement, k.namespace, name)
		if err != nil {
			return err
		}
		if u == nil {
			return fmt.Errorf("%s: placement %s does not exist", s.name, name)
		}
		if err := change(u); err != nil {
			return fmt.Errorf("%s: placement %s: %w", s.name, name, err)
		}
		_, err = s.resource(k.placement, k.namespace).Update(ctx, u, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt > 20 {
			return fmt.Errorf("%s: update placement %s: %w", s.name, name, err)
		}
	}
}

func deepCopy(m map[string]interface{}) map[string]interface{} {
	v, _ := deepCopyValue(m).(map[string]interface{})
	return v
}

func deepCopyValue(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			out[k] = deepCopyValue(x)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, x := range t {
			out[i] = deepCopyValue(x)
		}
		return out
	default:
		return v
	}
}
