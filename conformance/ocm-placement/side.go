package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

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
	gvrNamespace  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrEvent      = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	gvrCluster    = schema.GroupVersionResource{Group: clusterGroup, Version: "v1", Resource: "managedclusters"}
	gvrSet        = schema.GroupVersionResource{Group: clusterGroup, Version: "v1beta2", Resource: "managedclustersets"}
	gvrBinding    = schema.GroupVersionResource{Group: clusterGroup, Version: "v1beta2", Resource: "managedclustersetbindings"}
	gvrPlacement  = schema.GroupVersionResource{Group: clusterGroup, Version: "v1beta1", Resource: "placements"}
	gvrDecision   = schema.GroupVersionResource{Group: clusterGroup, Version: "v1beta1", Resource: "placementdecisions"}
	gvrAddOnScore = schema.GroupVersionResource{Group: clusterGroup, Version: "v1alpha1", Resource: "addonplacementscores"}
)

const (
	clusterGroup   = "cluster.open-cluster-management.io"
	placementLabel = clusterGroup + "/placement"
	groupNameLabel = clusterGroup + "/decision-group-name"
	groupIndex     = clusterGroup + "/decision-group-index"
	setLabel       = clusterGroup + "/clusterset"
)

// side is one implementation under comparison (OCM's controller on a
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
// status through the status subresource; returns what was written.
func (s *side) create(ctx context.Context, gvr schema.GroupVersionResource, object map[string]interface{}) (written, error) {
	u := &unstructured.Unstructured{Object: deepCopy(object)}
	w := written{gvr: gvr, key: storeKey(u.GetNamespace(), u.GetName())}
	status, hasStatus := u.Object["status"]
	created, err := s.resource(gvr, u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return w, fmt.Errorf("%s: create %s %s/%s: %w", s.name, gvr.Resource, u.GetNamespace(), u.GetName(), err)
	}
	w.resourceVersion = created.GetResourceVersion()
	if !hasStatus {
		return w, nil
	}
	created.Object["status"] = status
	updated, err := s.resource(gvr, u.GetNamespace()).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return w, fmt.Errorf("%s: status of %s %s/%s: %w", s.name, gvr.Resource, u.GetNamespace(), u.GetName(), err)
	}
	w.resourceVersion = updated.GetResourceVersion()
	return w, nil
}

// storeKey is an object's key in an informer's cache.
func storeKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// ensureNamespace creates a namespace unless it exists.
func (s *side) ensureNamespace(ctx context.Context, name string) error {
	ns := map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": name}}
	_, err := s.create(ctx, gvrNamespace, ns)
	if err != nil && apierrors.IsAlreadyExists(unwrapStatus(err)) {
		return nil
	}
	return err
}

// unwrapStatus finds the API status error inside a wrapped error.
func unwrapStatus(err error) error {
	for e := err; e != nil; {
		if _, ok := e.(apierrors.APIStatus); ok {
			return e
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return err
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

// remove deletes an object (a missing one is fine); returns the deletion
// as a write.
func (s *side) remove(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (written, error) {
	w := written{gvr: gvr, key: storeKey(namespace, name)}
	err := s.resource(gvr, namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return w, fmt.Errorf("%s: delete %s %s/%s: %w", s.name, gvr.Resource, namespace, name, err)
	}
	return w, nil
}

// setCluster replaces a ManagedCluster's labels and taints (retrying on
// conflicts), keeping the labels whose keys `keep` accepts.
func (s *side) setCluster(ctx context.Context, name string, labels map[string]string, taints []interface{}, keep func(string) bool) (written, error) {
	w := written{gvr: gvrCluster, key: name}
	for attempt := 0; ; attempt++ {
		u, err := s.get(ctx, gvrCluster, "", name)
		if err != nil {
			return w, err
		}
		if u == nil {
			return w, fmt.Errorf("%s: ManagedCluster %s does not exist", s.name, name)
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
		updated, err := s.resource(gvrCluster, "").Update(ctx, u, metav1.UpdateOptions{})
		if err == nil {
			w.resourceVersion = updated.GetResourceVersion()
			return w, nil
		}
		if !apierrors.IsConflict(err) || attempt > 20 {
			return w, fmt.Errorf("%s: update ManagedCluster %s: %w", s.name, name, err)
		}
	}
}

// event is one Event about a Placement: its reason, text, and when it was
// last seen (for "the latest" of a reason).
type event struct {
	Reason  string
	Message string
	last    time.Time
	version int64
}

// placementEvents lists the Events in a namespace about Placement `name`,
// oldest first.
func (s *side) placementEvents(ctx context.Context, namespace, name string) ([]event, error) {
	items, err := s.list(ctx, gvrEvent, namespace, "")
	if err != nil {
		return nil, err
	}
	var out []event
	for _, item := range items {
		kind, _, _ := unstructured.NestedString(item.Object, "involvedObject", "kind")
		who, _, _ := unstructured.NestedString(item.Object, "involvedObject", "name")
		if kind != "Placement" || who != name {
			continue
		}
		reason, _, _ := unstructured.NestedString(item.Object, "reason")
		message, _, _ := unstructured.NestedString(item.Object, "message")
		e := event{Reason: reason, Message: message}
		for _, path := range [][]string{{"lastTimestamp"}, {"series", "lastObservedTime"}, {"eventTime"}, {"firstTimestamp"}} {
			text, _, _ := unstructured.NestedString(item.Object, path...)
			if t, err := time.Parse(time.RFC3339Nano, text); err == nil && t.After(e.last) {
				e.last = t
			}
		}
		e.version, _ = strconv.ParseInt(item.GetResourceVersion(), 10, 64)
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].last.Equal(out[j].last) {
			return out[i].last.Before(out[j].last)
		}
		return out[i].version < out[j].version
	})
	return out, nil
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
