//! The order manifests are applied in (docs/spec/rollout.md): namespaces; then
//! configmaps, secrets, service accounts, CRDs, volumes, quotas; then roles;
//! then role bindings; then workloads, services, jobs, ingresses; then
//! webhooks; unknown kinds last. Deletion runs in the reverse order.

/// The wave of a kind (lower applies first).
pub fn wave(group: &str, kind: &str) -> u8 {
    match (group, kind) {
        ("", "Namespace") => 0,
        ("", "ConfigMap" | "Secret" | "ServiceAccount" | "PersistentVolume" | "PersistentVolumeClaim")
        | ("", "ResourceQuota" | "LimitRange")
        | ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("storage.k8s.io", "StorageClass")
        | ("scheduling.k8s.io", "PriorityClass") => 1,
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => 2,
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => 3,
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("", "Pod" | "Service" | "ReplicationController")
        | ("batch", "Job" | "CronJob")
        | ("networking.k8s.io", "Ingress" | "IngressClass" | "NetworkPolicy")
        | ("autoscaling", "HorizontalPodAutoscaler")
        | ("policy", "PodDisruptionBudget") => 4,
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration") => 5,
        _ => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::wave;

    #[test]
    fn waves_follow_the_spec_order() {
        let order = [
            ("", "Namespace"),
            ("", "ConfigMap"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("apps", "Deployment"),
            ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
            ("example.com", "Widget"),
        ];
        let waves: Vec<u8> = order.iter().map(|(g, k)| wave(g, k)).collect();
        assert!(waves.windows(2).all(|w| w[0] < w[1]), "{waves:?}");
        assert_eq!(wave("apiextensions.k8s.io", "CustomResourceDefinition"), wave("", "Secret"));
        assert_eq!(wave("", "Service"), wave("batch", "Job"));
    }
}
