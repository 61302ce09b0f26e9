package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// prepareCluster registers the fake Nodes and waits until the cluster can run
// a workload: every Node Ready (KWOK works) and the default ServiceAccount
// present (the controller manager works).
func prepareCluster(ctx context.Context, client *kubernetes.Clientset, o *options, failed <-chan error) error {
	nodes, err := fakeNodes(o)
	if err != nil {
		return err
	}
	if err := ensureStorageClass(ctx, client); err != nil {
		return err
	}
	for _, node := range nodes {
		_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering node %s: %w", node.Name, err)
		}
	}
	deadline, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	waiting := "nodes Ready"
	err = wait.PollUntilContextCancel(deadline, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-failed:
			return false, err
		default:
		}
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range list.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready < o.nodes {
			waiting = fmt.Sprintf("nodes Ready (%d of %d)", ready, o.nodes)
			return false, nil
		}
		waiting = "the default ServiceAccount"
		_, err = client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", waiting, err)
	}
	return nil
}

// fakeNodes describes the Nodes KWOK keeps: capacity and allocatable from
// the flags, labels a kubelet would set, and the annotation KWOK's own
// tooling marks its nodes with.
func fakeNodes(o *options) ([]*corev1.Node, error) {
	capacity := corev1.ResourceList{}
	for name, value := range map[corev1.ResourceName]string{
		corev1.ResourceCPU: o.nodeCPU, corev1.ResourceMemory: o.nodeMemory, corev1.ResourcePods: o.nodePods,
	} {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("node %s %q: %w", name, value, err)
		}
		capacity[name] = q
	}
	extra := map[string]string{}
	if o.nodeLabels != "" {
		for _, pair := range strings.Split(o.nodeLabels, ",") {
			k, v, ok := strings.Cut(pair, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--node-labels %q: %q is not k=v", o.nodeLabels, pair)
			}
			extra[k] = v
		}
	}
	nodes := make([]*corev1.Node, 0, o.nodes)
	for i := 0; i < o.nodes; i++ {
		name := fmt.Sprintf("%s-node-%d", o.name, i)
		labels := map[string]string{
			"kubernetes.io/hostname": name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
			"type":                   "kwok",
		}
		for k, v := range extra {
			labels[k] = v
		}
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Labels:      labels,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			},
			Status: corev1.NodeStatus{Capacity: capacity.DeepCopy(), Allocatable: capacity.DeepCopy()},
		})
	}
	return nodes, nil
}
