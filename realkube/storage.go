package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The default StorageClass of every realkube cluster. kind ships one named
// `standard` backed by a local-path provisioner, and workloads written for
// kind (KubeFleet's end-to-end suite's StatefulSets among them) claim it by
// name; realkube provides the same name with a provisioner of its own.
const (
	storageClassName  = "standard"
	provisionerName   = "realkube.local/hostpath"
	provisionedByNote = "pv.kubernetes.io/provisioned-by"
	// The annotation the PersistentVolume controller sets on a claim that
	// waits for an external provisioner.
	storageProvisionerNote = "volume.kubernetes.io/storage-provisioner"
)

// ensureStorageClass creates the default `standard` StorageClass. Binding
// is Immediate: KWOK runs no kubelet that could need the volume on a
// particular node, so waiting for a consumer would only add a step.
func ensureStorageClass(ctx context.Context, client kubernetes.Interface) error {
	immediate := storagev1.VolumeBindingImmediate
	deleteReclaim := corev1.PersistentVolumeReclaimDelete
	class := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        storageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       provisionerName,
		ReclaimPolicy:     &deleteReclaim,
		VolumeBindingMode: &immediate,
	}
	_, err := client.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", storageClassName, err)
	}
	return nil
}

// runProvisioner is the `standard` class's provisioner: for each claim the
// PersistentVolume controller hands to it, a hostPath PersistentVolume
// under dataDir, pre-bound to the claim (the controller then binds both);
// a released volume it made is deleted, as its Delete reclaim policy asks.
// No container ever mounts it: KWOK only pretends to run Pods.
func runProvisioner(ctx context.Context, client kubernetes.Interface, dataDir string) error {
	// The periodic resync retries a claim whose volume could not be made.
	factory := informers.NewSharedInformerFactory(client, 10*time.Second)
	claims := factory.Core().V1().PersistentVolumeClaims().Informer()
	volumes := factory.Core().V1().PersistentVolumes().Informer()
	provision := func(obj interface{}) {
		if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			provisionFor(ctx, client, dataDir, claim)
		}
	}
	release := func(obj interface{}) {
		if volume, ok := obj.(*corev1.PersistentVolume); ok {
			deleteIfReleased(ctx, client, volume)
		}
	}
	if _, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    provision,
		UpdateFunc: func(_, obj interface{}) { provision(obj) },
	}); err != nil {
		return err
	}
	if _, err := volumes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    release,
		UpdateFunc: func(_, obj interface{}) { release(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	return ctx.Err()
}

// provisionFor creates the volume of a pending claim handed to this
// provisioner; the volume's name is derived from the claim's uid, so a
// repeated event finds it already there.
func provisionFor(ctx context.Context, client kubernetes.Interface, dataDir string, claim *corev1.PersistentVolumeClaim) {
	if claim.Status.Phase != corev1.ClaimPending || claim.Spec.VolumeName != "" ||
		claim.Annotations[storageProvisionerNote] != provisionerName {
		return
	}
	name := "pvc-" + string(claim.UID)
	size, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		klog.Warningf("realkube: claim %s/%s requests no storage; not provisioning", claim.Namespace, claim.Name)
		return
	}
	hostPathType := corev1.HostPathDirectoryOrCreate
	volume := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{provisionedByNote: provisionerName},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   claim.Spec.AccessModes,
			StorageClassName:              storageClassName,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(dataDir, "volumes", name), Type: &hostPathType},
			},
		},
	}
	_, err := client.CoreV1().PersistentVolumes().Create(ctx, volume, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
		klog.Warningf("realkube: provisioning %s for claim %s/%s: %v", name, claim.Namespace, claim.Name, err)
	}
}

// deleteIfReleased deletes a volume this provisioner made once its claim is
// gone.
func deleteIfReleased(ctx context.Context, client kubernetes.Interface, volume *corev1.PersistentVolume) {
	if volume.Status.Phase != corev1.VolumeReleased || volume.Annotations[provisionedByNote] != provisionerName {
		return
	}
	err := client.CoreV1().PersistentVolumes().Delete(ctx, volume.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		klog.Warningf("realkube: deleting released volume %s: %v", volume.Name, err)
	}
}
