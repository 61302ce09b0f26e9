//! The kind registry: every kind Fleet knows by name, with its group, plural,
//! short names, scope and whether Fleet types and validates it.

/// Whether objects of a kind live in a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Objects carry `metadata.namespace`.
    Namespaced,
    /// Objects have no namespace.
    Cluster,
}

/// What Fleet knows about one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindInfo {
    /// API group (`""` for the core group).
    pub group: &'static str,
    /// The Kind, e.g. `ClusterResourcePlacement`.
    pub kind: &'static str,
    /// Lowercase plural, e.g. `clusterresourceplacements`.
    pub plural: &'static str,
    /// Short names accepted on the command line.
    pub short_names: &'static [&'static str],
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// Fleet kinds are typed: validated, defaulted, unknown fields refused.
    pub typed: bool,
    /// API versions accepted, the first being the one printed.
    pub versions: &'static [&'static str],
}

impl KindInfo {
    /// `group/version` of the preferred version (`v1` for the core group).
    pub fn api_version(&self) -> String {
        let version = self.versions.first().copied().unwrap_or("v1");
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// Whether `api_version` (e.g. `placement.kubernetes-fleet.io/v1`) names this kind's group and an accepted version.
    pub fn accepts_api_version(&self, api_version: &str) -> bool {
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        group == self.group && self.versions.contains(&version)
    }
}

/// The API group of MemberCluster.
pub const FLEET_CLUSTER_GROUP: &str = "cluster.kubernetes-fleet.io";
const FLEET_CLUSTER: &str = FLEET_CLUSTER_GROUP;
/// The API group of placements, snapshots, bindings and Work.
pub const FLEET_PLACEMENT_GROUP: &str = "placement.kubernetes-fleet.io";
const FLEET_PLACEMENT: &str = FLEET_PLACEMENT_GROUP;
const OCM_CLUSTER: &str = crate::ocm::CLUSTER_GROUP;
const OCM_WORK: &str = crate::ocm::WORK_GROUP;
const CLUSTER_VERSIONS: &[&str] = &["v1beta1", "v1"];
const PLACEMENT_VERSIONS: &[&str] = &["v1beta1", "v1", "v1alpha1"];

macro_rules! kind {
    ($group:expr, $kind:literal, $plural:literal, [$($short:literal),*], $scope:ident, $typed:literal, $versions:expr) => {
        KindInfo {
            group: $group,
            kind: $kind,
            plural: $plural,
            short_names: &[$($short),*],
            scope: Scope::$scope,
            typed: $typed,
            versions: $versions,
        }
    };
}

/// Every kind known by name. Kinds not listed here are hub resources of
/// unknown scope (see [`scope_of_unknown`]).
#[rustfmt::skip]
pub static KINDS: &[KindInfo] = &[
    // Fleet kinds.
    kind!(FLEET_CLUSTER, "MemberCluster", "memberclusters", ["mc"], Cluster, true, CLUSTER_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterResourcePlacement", "clusterresourceplacements", ["crp"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ResourcePlacement", "resourceplacements", ["rp"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterResourcePlacementStatus", "clusterresourceplacementstatuses", ["crps"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterResourceSnapshot", "clusterresourcesnapshots", ["crs"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ResourceSnapshot", "resourcesnapshots", ["rs"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterSchedulingPolicySnapshot", "clusterschedulingpolicysnapshots", ["csps"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "SchedulingPolicySnapshot", "schedulingpolicysnapshots", ["sps"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterResourceBinding", "clusterresourcebindings", ["crb"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ResourceBinding", "resourcebindings", ["rb"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "Work", "works", ["work"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterResourceOverride", "clusterresourceoverrides", ["cro"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ResourceOverride", "resourceoverrides", ["ro"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterResourceOverrideSnapshot", "clusterresourceoverridesnapshots", ["cros"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ResourceOverrideSnapshot", "resourceoverridesnapshots", ["ros"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterStagedUpdateStrategy", "clusterstagedupdatestrategies", ["csus"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "StagedUpdateStrategy", "stagedupdatestrategies", ["sus"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterStagedUpdateRun", "clusterstagedupdateruns", ["csur"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "StagedUpdateRun", "stagedupdateruns", ["sur"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterApprovalRequest", "clusterapprovalrequests", ["careq"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ApprovalRequest", "approvalrequests", ["areq"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterResourcePlacementEviction", "clusterresourceplacementevictions", ["crpe"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterResourcePlacementDisruptionBudget", "clusterresourceplacementdisruptionbudgets", ["crpdb"], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ResourcePlacementEviction", "resourceplacementevictions", ["rpe"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ResourcePlacementDisruptionBudget", "resourceplacementdisruptionbudgets", ["rpdb"], Namespaced, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ClusterResourceEnvelope", "clusterresourceenvelopes", [], Cluster, true, PLACEMENT_VERSIONS),
    kind!(FLEET_PLACEMENT, "ResourceEnvelope", "resourceenvelopes", [], Namespaced, true, PLACEMENT_VERSIONS),
    // Open Cluster Management kinds.
    kind!(OCM_CLUSTER, "ManagedCluster", "managedclusters", ["mcl", "mcls"], Cluster, true, &["v1"]),
    kind!(OCM_CLUSTER, "Placement", "placements", ["placement"], Namespaced, true, &["v1beta1", "v1alpha1"]),
    kind!(OCM_CLUSTER, "PlacementDecision", "placementdecisions", ["placementdecision", "pd"], Namespaced, true, &["v1beta1", "v1alpha1"]),
    kind!(OCM_CLUSTER, "ManagedClusterSet", "managedclustersets", ["mcs", "mclset", "mclsets"], Cluster, true, &["v1beta2"]),
    kind!(OCM_CLUSTER, "ManagedClusterSetBinding", "managedclustersetbindings", ["mcsb", "mclsetbinding", "mclsetbindings"], Namespaced, true, &["v1beta2"]),
    kind!(OCM_CLUSTER, "AddOnPlacementScore", "addonplacementscores", [], Namespaced, true, &["v1alpha1"]),
    kind!(OCM_WORK, "ManifestWork", "manifestworks", ["mw"], Namespaced, true, &["v1"]),
    kind!(OCM_WORK, "ManifestWorkReplicaSet", "manifestworkreplicasets", ["mwrs"], Namespaced, true, &["v1alpha1"]),
    // The SIG-Multicluster Cluster Inventory API: the hub keeps one
    // ClusterProfile per member (crate::cluster_profile).
    kind!("multicluster.x-k8s.io", "ClusterProfile", "clusterprofiles", ["cp"], Namespaced, false, &["v1alpha1"]),
    // Events.
    kind!("", "Event", "events", ["ev"], Namespaced, false, &["v1"]),
    // Built-in Kubernetes kinds stored as hub resources (scope known).
    kind!("", "Namespace", "namespaces", ["ns"], Cluster, false, &["v1"]),
    kind!("", "ConfigMap", "configmaps", ["cm"], Namespaced, false, &["v1"]),
    kind!("", "Secret", "secrets", [], Namespaced, false, &["v1"]),
    kind!("", "Service", "services", ["svc"], Namespaced, false, &["v1"]),
    kind!("", "ServiceAccount", "serviceaccounts", ["sa"], Namespaced, false, &["v1"]),
    kind!("", "PersistentVolumeClaim", "persistentvolumeclaims", ["pvc"], Namespaced, false, &["v1"]),
    kind!("", "PersistentVolume", "persistentvolumes", ["pv"], Cluster, false, &["v1"]),
    kind!("", "Pod", "pods", ["po"], Namespaced, false, &["v1"]),
    kind!("", "LimitRange", "limitranges", ["limits"], Namespaced, false, &["v1"]),
    kind!("", "ResourceQuota", "resourcequotas", ["quota"], Namespaced, false, &["v1"]),
    kind!("", "Node", "nodes", ["no"], Cluster, false, &["v1"]),
    kind!("apps", "Deployment", "deployments", ["deploy"], Namespaced, false, &["v1"]),
    kind!("apps", "StatefulSet", "statefulsets", ["sts"], Namespaced, false, &["v1"]),
    kind!("apps", "DaemonSet", "daemonsets", ["ds"], Namespaced, false, &["v1"]),
    kind!("apps", "ReplicaSet", "replicasets", [], Namespaced, false, &["v1"]),
    kind!("batch", "Job", "jobs", [], Namespaced, false, &["v1"]),
    kind!("batch", "CronJob", "cronjobs", ["cj"], Namespaced, false, &["v1"]),
    kind!("networking.k8s.io", "Ingress", "ingresses", ["ing"], Namespaced, false, &["v1"]),
    kind!("networking.k8s.io", "IngressClass", "ingressclasses", [], Cluster, false, &["v1"]),
    kind!("networking.k8s.io", "NetworkPolicy", "networkpolicies", ["netpol"], Namespaced, false, &["v1"]),
    kind!("rbac.authorization.k8s.io", "Role", "roles", [], Namespaced, false, &["v1"]),
    kind!("rbac.authorization.k8s.io", "RoleBinding", "rolebindings", [], Namespaced, false, &["v1"]),
    kind!("rbac.authorization.k8s.io", "ClusterRole", "clusterroles", [], Cluster, false, &["v1"]),
    kind!("rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", [], Cluster, false, &["v1"]),
    kind!("apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions", ["crd", "crds"], Cluster, false, &["v1"]),
    kind!("storage.k8s.io", "StorageClass", "storageclasses", ["sc"], Cluster, false, &["v1"]),
    kind!("scheduling.k8s.io", "PriorityClass", "priorityclasses", ["pc"], Cluster, false, &["v1"]),
    kind!("policy", "PodDisruptionBudget", "poddisruptionbudgets", ["pdb"], Namespaced, false, &["v1"]),
    kind!("autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscalers", ["hpa"], Namespaced, false, &["v2", "v1"]),
    kind!("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", [], Cluster, false, &["v1"]),
    kind!("admissionregistration.k8s.io", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", [], Cluster, false, &["v1"]),
];

/// Finds a kind by any name a user may type: the Kind (any case), its plural,
/// its singular lowercase form, or a short name.
pub fn lookup(name: &str) -> Option<&'static KindInfo> {
    let lower = name.to_ascii_lowercase();
    KINDS
        .iter()
        .find(|k| k.kind.eq_ignore_ascii_case(&lower) || k.plural == lower || k.short_names.contains(&lower.as_str()))
}

/// Finds a kind by group and Kind exactly as written in a document.
pub fn lookup_group_kind(group: &str, kind: &str) -> Option<&'static KindInfo> {
    KINDS.iter().find(|k| k.group == group && k.kind == kind)
}

/// The placement group of the KubeFleet project's newer API, reserved for
/// Fleet although Fleet implements no kind in it yet.
pub const KUBEFLEET_PLACEMENT_GROUP: &str = "placement.kubefleet.dev";
/// Open Cluster Management's groups all end with this (or are it).
const OCM_GROUP_FAMILY: &str = "open-cluster-management.io";

/// Whether `group` is one of Fleet's own API groups (Fleet's, KubeFleet's
/// and Open Cluster Management's). Fleet is the only implementation of
/// these groups on the hub, so an object of a kind it does not implement
/// there would be stored and then never acted on: such kinds are refused
/// (see [`check_own_group`]) instead of being stored as resources to place.
pub fn is_own_group(group: &str) -> bool {
    group == FLEET_PLACEMENT_GROUP
        || group == FLEET_CLUSTER_GROUP
        || group == KUBEFLEET_PLACEMENT_GROUP
        || group == OCM_GROUP_FAMILY
        || group.strip_suffix(OCM_GROUP_FAMILY).is_some_and(|prefix| prefix.ends_with('.'))
}

/// The kinds Fleet implements in `group`, in registry order: the same
/// list the hub serves and its discovery advertises.
pub fn kinds_in_group(group: &str) -> impl Iterator<Item = &'static KindInfo> + '_ {
    KINDS.iter().filter(move |k| k.group == group)
}

/// Why a document of one of Fleet's own API groups is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OwnGroupError {
    /// The group is Fleet's but the kind is not one Fleet implements there.
    #[error(
        "{kind} {name:?} is invalid:\n  kind: Unsupported value: {kind:?}: no matches for kind {kind:?} in version \"{group}/{version}\": \
         {group} is one of Fleet's own API groups and Fleet implements {}{}",
        supported_kinds(supported),
        elsewhere_hint(kind, elsewhere)
    )]
    UnknownKind {
        kind: String,
        name: String,
        group: String,
        version: String,
        /// The kinds Fleet implements in `group`.
        supported: Vec<String>,
        /// `group/version` values where a kind of this name is implemented.
        elsewhere: Vec<String>,
    },
    /// The kind is Fleet's but not served at this version.
    #[error(
        "{kind} {name:?} is invalid:\n  apiVersion: Unsupported value: \"{group}/{version}\": kind {kind} of {group} is served at \
         versions {}; supported values: {}",
        served.join(", "),
        served.iter().map(|v| format!("{group}/{v}")).collect::<Vec<_>>().join(", ")
    )]
    UnknownVersion { kind: String, name: String, group: String, version: String, served: Vec<String> },
}

fn supported_kinds(supported: &[String]) -> String {
    if supported.is_empty() {
        "no kinds in it".to_string()
    } else {
        format!("only these kinds in it: {}", supported.join(", "))
    }
}

fn elsewhere_hint(kind: &str, elsewhere: &[String]) -> String {
    if elsewhere.is_empty() {
        String::new()
    } else {
        format!("; {kind} is served as apiVersion {}", elsewhere.join(" or "))
    }
}

/// Refuses a document (`api_version`, `kind`, object `name`) of one of
/// Fleet's own API groups unless the registry implements that kind at that
/// version; documents of every other group pass (a user's CRD kinds and
/// built-in Kubernetes kinds are stored as resources to place).
pub fn check_own_group(api_version: &str, kind: &str, name: &str) -> Result<(), Box<OwnGroupError>> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if !is_own_group(group) {
        return Ok(());
    }
    match lookup_group_kind(group, kind) {
        Some(info) if info.versions.contains(&version) => Ok(()),
        Some(info) => Err(Box::new(OwnGroupError::UnknownVersion {
            kind: kind.to_string(),
            name: name.to_string(),
            group: group.to_string(),
            version: version.to_string(),
            served: info.versions.iter().map(|v| v.to_string()).collect(),
        })),
        None => Err(Box::new(OwnGroupError::UnknownKind {
            kind: kind.to_string(),
            name: name.to_string(),
            group: group.to_string(),
            version: version.to_string(),
            supported: kinds_in_group(group).map(|k| k.kind.to_string()).collect(),
            // A kind of the same name in another of Fleet's groups (e.g. a
            // KubeFleet group written for Fleet's) is the likely intent.
            elsewhere: KINDS
                .iter()
                .filter(|k| k.kind == kind && is_own_group(k.group))
                .map(|k| k.api_version())
                .collect(),
        })),
    }
}

/// The scope of a kind Fleet does not know (and no CRD declares): namespaced
/// exactly when the object carries a namespace.
pub fn scope_of_unknown(has_namespace: bool) -> Scope {
    if has_namespace {
        Scope::Namespaced
    } else {
        Scope::Cluster
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_from_the_spec_resolve() {
        for (name, kind) in [
            ("crp", "ClusterResourcePlacement"),
            ("rp", "ResourcePlacement"),
            ("crps", "ClusterResourcePlacementStatus"),
            ("mc", "MemberCluster"),
            ("crs", "ClusterResourceSnapshot"),
            ("rs", "ResourceSnapshot"),
            ("csps", "ClusterSchedulingPolicySnapshot"),
            ("sps", "SchedulingPolicySnapshot"),
            ("crb", "ClusterResourceBinding"),
            ("rb", "ResourceBinding"),
            ("work", "Work"),
            ("cro", "ClusterResourceOverride"),
            ("ro", "ResourceOverride"),
            ("csus", "ClusterStagedUpdateStrategy"),
            ("sus", "StagedUpdateStrategy"),
            ("csur", "ClusterStagedUpdateRun"),
            ("sur", "StagedUpdateRun"),
            ("careq", "ClusterApprovalRequest"),
            ("areq", "ApprovalRequest"),
            ("crpe", "ClusterResourcePlacementEviction"),
            ("crpdb", "ClusterResourcePlacementDisruptionBudget"),
            ("rpe", "ResourcePlacementEviction"),
            ("rpdb", "ResourcePlacementDisruptionBudget"),
            ("placement", "Placement"),
            ("placementdecision", "PlacementDecision"),
            ("pd", "PlacementDecision"),
            ("mcs", "ManagedClusterSet"),
            ("mcsb", "ManagedClusterSetBinding"),
            ("mclset", "ManagedClusterSet"),
            ("mclsetbinding", "ManagedClusterSetBinding"),
            ("mw", "ManifestWork"),
            ("mcl", "ManagedCluster"),
            ("managedclusters", "ManagedCluster"),
            ("manifestworks", "ManifestWork"),
            ("mwrs", "ManifestWorkReplicaSet"),
            ("addonplacementscores", "AddOnPlacementScore"),
            ("ns", "Namespace"),
            ("cm", "ConfigMap"),
            ("deploy", "Deployment"),
            ("clusterresourceplacements", "ClusterResourcePlacement"),
            ("ClusterResourcePlacement", "ClusterResourcePlacement"),
            ("configmap", "ConfigMap"),
        ] {
            assert_eq!(lookup(name).map(|k| k.kind), Some(kind), "{name}");
        }
    }

    #[test]
    fn names_are_unambiguous() {
        let mut seen = std::collections::BTreeMap::new();
        for k in KINDS {
            for n in k.short_names.iter().copied().chain([k.plural]) {
                assert!(seen.insert(n, k.kind).is_none(), "{n} names two kinds");
            }
        }
    }

    #[test]
    fn own_groups_are_fleets_kubefleets_and_ocms() {
        for group in [
            "placement.kubernetes-fleet.io",
            "cluster.kubernetes-fleet.io",
            "placement.kubefleet.dev",
            "open-cluster-management.io",
            "cluster.open-cluster-management.io",
            "work.open-cluster-management.io",
            "addon.open-cluster-management.io",
        ] {
            assert!(is_own_group(group), "{group}");
        }
        for group in
            ["", "apps", "example.com", "kubernetes-fleet.io", "evil-open-cluster-management.io", "kubefleet.dev"]
        {
            assert!(!is_own_group(group), "{group}");
        }
    }

    #[test]
    fn known_kinds_of_own_groups_pass_at_served_versions() {
        for (api_version, kind) in [
            ("placement.kubernetes-fleet.io/v1", "ClusterResourcePlacement"),
            ("placement.kubernetes-fleet.io/v1beta1", "ResourcePlacement"),
            ("cluster.kubernetes-fleet.io/v1beta1", "MemberCluster"),
            ("cluster.open-cluster-management.io/v1beta1", "Placement"),
            ("cluster.open-cluster-management.io/v1", "ManagedCluster"),
            ("work.open-cluster-management.io/v1", "ManifestWork"),
        ] {
            assert_eq!(check_own_group(api_version, kind, "x"), Ok(()), "{api_version} {kind}");
        }
    }

    #[test]
    fn unknown_kinds_of_own_groups_are_refused_naming_group_and_supported_kinds() {
        let Err(e) = check_own_group("placement.kubernetes-fleet.io/v1", "MetricCollector", "web") else {
            panic!("accepted")
        };
        let text = e.to_string();
        assert!(text.starts_with("MetricCollector \"web\" is invalid:\n  kind: Unsupported value"), "{text}");
        assert!(
            text.contains("no matches for kind \"MetricCollector\" in version \"placement.kubernetes-fleet.io/v1\""),
            "{text}"
        );
        // The supported list is the registry's, in full.
        for k in kinds_in_group(FLEET_PLACEMENT_GROUP) {
            assert!(text.contains(k.kind), "{text} lacks {}", k.kind);
        }
        assert!(check_own_group("placement.kubernetes-fleet.io/v1beta1", "AppliedWork", "w").is_err());
        let text =
            check_own_group("cluster.kubernetes-fleet.io/v1", "InternalMemberCluster", "m").unwrap_err().to_string();
        assert!(text.contains("only these kinds in it: MemberCluster"), "{text}");
        let text =
            check_own_group("work.open-cluster-management.io/v1", "AppliedManifestWork", "a").unwrap_err().to_string();
        assert!(text.contains("only these kinds in it: ManifestWork, ManifestWorkReplicaSet"), "{text}");
        let text = check_own_group("addon.open-cluster-management.io/v1alpha1", "ClusterManagementAddOn", "a")
            .unwrap_err()
            .to_string();
        assert!(
            text.contains(
                "addon.open-cluster-management.io is one of Fleet's own API groups and Fleet implements no kinds in it"
            ),
            "{text}"
        );
    }

    #[test]
    fn kubefleet_group_is_refused_and_points_to_the_served_kind() {
        let text = check_own_group("placement.kubefleet.dev/v1alpha1", "PlacementPolicy", "p").unwrap_err().to_string();
        assert!(
            text.contains(
                "placement.kubefleet.dev is one of Fleet's own API groups and Fleet implements no kinds in it"
            ),
            "{text}"
        );
        assert!(!text.contains("served as"), "{text}");
        let text =
            check_own_group("placement.kubefleet.dev/v1", "ClusterResourcePlacement", "p").unwrap_err().to_string();
        assert!(
            text.ends_with("ClusterResourcePlacement is served as apiVersion placement.kubernetes-fleet.io/v1beta1"),
            "{text}"
        );
    }

    #[test]
    fn unknown_versions_of_own_kinds_are_refused_naming_the_served_versions() {
        let e = check_own_group("placement.kubernetes-fleet.io/v2", "ClusterResourcePlacement", "web").unwrap_err();
        assert!(matches!(*e, OwnGroupError::UnknownVersion { .. }), "{e:?}");
        let text = e.to_string();
        assert!(text.contains("apiVersion: Unsupported value: \"placement.kubernetes-fleet.io/v2\""), "{text}");
        assert!(text.contains("served at versions v1beta1, v1, v1alpha1"), "{text}");
        let text = check_own_group("cluster.open-cluster-management.io/v1beta1", "ManagedClusterSet", "s")
            .unwrap_err()
            .to_string();
        assert!(text.contains("supported values: cluster.open-cluster-management.io/v1beta2"), "{text}");
    }

    #[test]
    fn other_groups_are_untouched() {
        for (api_version, kind) in [
            ("example.com/v1", "Widget"),
            ("v1", "ConfigMap"),
            ("v1", "SomethingNew"),
            ("apps/v1", "Deployment"),
            ("kubernetes-fleet.io/v1", "Anything"),
        ] {
            assert_eq!(check_own_group(api_version, kind, "x"), Ok(()), "{api_version} {kind}");
        }
    }

    #[test]
    fn accepts_listed_versions_only() {
        let crp = lookup("crp").unwrap();
        assert!(crp.accepts_api_version("placement.kubernetes-fleet.io/v1"));
        assert!(crp.accepts_api_version("placement.kubernetes-fleet.io/v1beta1"));
        assert!(!crp.accepts_api_version("placement.kubernetes-fleet.io/v2"));
        assert_eq!(lookup("cm").unwrap().api_version(), "v1");
        assert_eq!(lookup("mw").unwrap().api_version(), "work.open-cluster-management.io/v1");
        assert_eq!(lookup("mwrs").unwrap().api_version(), "work.open-cluster-management.io/v1alpha1");
        assert!(lookup("placement").unwrap().accepts_api_version("cluster.open-cluster-management.io/v1alpha1"));
        assert!(!lookup("mcs").unwrap().accepts_api_version("cluster.open-cluster-management.io/v1beta1"));
    }
}

/// The scopes of kinds declared by CustomResourceDefinitions stored on the
/// hub, consulted after the registry. Envelopes are checked against them at
/// apply and again at Work generation, since a CRD may be stored after the
/// envelope that wraps one of its objects (docs/spec/envelopes.md EN-8).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeclaredScopes {
    /// group → Kind → scope.
    by_group: std::collections::BTreeMap<String, std::collections::BTreeMap<String, Scope>>,
}

impl DeclaredScopes {
    /// Records that a CRD declares `group`/`kind` with `scope`.
    pub fn declare(&mut self, group: &str, kind: &str, scope: Scope) {
        self.by_group.entry(group.to_string()).or_default().insert(kind.to_string(), scope);
    }

    /// The scope of a kind: the registry's, else a declared one, else
    /// unknown.
    pub fn scope_of(&self, group: &str, kind: &str) -> Option<Scope> {
        lookup_group_kind(group, kind)
            .map(|k| k.scope)
            .or_else(|| self.by_group.get(group).and_then(|kinds| kinds.get(kind)).copied())
    }
}
