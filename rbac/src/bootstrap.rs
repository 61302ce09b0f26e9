//! The built-in policy: default ClusterRoles and ClusterRoleBindings every
//! hub has without anyone applying them. They are not stored: the hub adds
//! them to the stored objects whenever it builds its [`Policy`], ahead of
//! them, so a stored object of the same name is ignored and nobody can
//! delete or weaken them (upgrading the hub updates them).
//!
//! | ClusterRole            | grants                                                        | bound to                   |
//! |------------------------|---------------------------------------------------------------|----------------------------|
//! | `cluster-admin`        | everything                                                    | group [`MASTERS_GROUP`]    |
//! | `fleet:viewer`         | reading every kind, the hub's status and heartbeats           | group [`VIEWERS_GROUP`]    |
//! | `system:discovery`     | discovery, OpenAPI, version, health, the nodes' API endpoints | `system:authenticated`     |
//! | `system:basic-user`    | SelfSubjectAccessReview and SelfSubjectRulesReview            | `system:authenticated`     |
//! | `admin`                | `edit`, plus Roles, RoleBindings and approving updates        | (bind it in a namespace)   |
//! | `edit`                 | `view`, plus writing tenant kinds and Secrets                 | (bind it in a namespace)   |
//! | `view`                 | reading tenant kinds (not Secrets)                            | (bind it in a namespace)   |
//!
//! `admin`, `edit` and `view` aggregate, as in Kubernetes: they hold the
//! rules of every ClusterRole labeled `rbac.authorization.k8s.io/aggregate-to-<name>: "true"`,
//! so a CRD's author extends them by applying a labeled ClusterRole.

use crate::selector::LabelSelector;
use crate::types::{AggregationRule, Binding, BindingKind, PolicyRule, Role, RoleKind, RoleRef, Subject, GROUP};

/// The group of the `admin` certificate, bound to `cluster-admin`.
pub const MASTERS_GROUP: &str = "system:masters";
/// The group of the `viewer` certificate, bound to `fleet:viewer`.
pub const VIEWERS_GROUP: &str = "fleet:viewers";
/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// The non-resource path of the gRPC `ClusterStatus` call (verb `get`).
pub const PATH_CLUSTER_STATUS: &str = "/fleet/cluster/status";
/// The non-resource path of `MemberHeartbeats` (verb `get`).
pub const PATH_HEARTBEATS: &str = "/fleet/cluster/heartbeats";
/// The non-resource path of `AddNode` (`create`) and `RemoveNode` (`delete`).
pub const PATH_NODES: &str = "/fleet/cluster/nodes";
/// The non-resource path of `SaveSnapshot` (verb `create`).
pub const PATH_SNAPSHOT: &str = "/fleet/cluster/snapshot";
/// The non-resource path of `CreateToken` (verb `create`).
pub const PATH_TOKENS: &str = "/fleet/tokens";

const PLACEMENT: &str = "placement.kubernetes-fleet.io";
const OCM_CLUSTER: &str = "cluster.open-cluster-management.io";
const OCM_WORK: &str = "work.open-cluster-management.io";
const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// The namespaced kinds tenants read with `view`, by group.
pub const VIEW_RESOURCES: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "configmaps",
            "events",
            "limitranges",
            "namespaces",
            "persistentvolumeclaims",
            "pods",
            "resourcequotas",
            "serviceaccounts",
            "services",
        ],
    ),
    ("apps", &["daemonsets", "deployments", "replicasets", "statefulsets"]),
    ("batch", &["cronjobs", "jobs"]),
    ("networking.k8s.io", &["ingresses", "networkpolicies"]),
    (
        PLACEMENT,
        &[
            "approvalrequests",
            "clusterresourceplacementstatuses",
            "resourcebindings",
            "resourceenvelopes",
            "resourceoverrides",
            "resourceoverridesnapshots",
            "resourceplacementdisruptionbudgets",
            "resourceplacementevictions",
            "resourceplacements",
            "resourcesnapshots",
            "schedulingpolicysnapshots",
            "stagedupdateruns",
            "stagedupdatestrategies",
        ],
    ),
    (OCM_CLUSTER, &["addonplacementscores", "managedclustersetbindings", "placementdecisions", "placements"]),
    (OCM_WORK, &["manifestworkreplicasets", "manifestworks"]),
];

/// The kinds tenants write with `edit`: those they author. Snapshots,
/// bindings, decisions and scores are written by the hub's controllers
/// and member agents, so tenants only read them.
pub const EDIT_RESOURCES: &[(&str, &[&str])] = &[
    ("", &["configmaps", "persistentvolumeclaims", "pods", "secrets", "serviceaccounts", "services"]),
    ("apps", &["daemonsets", "deployments", "replicasets", "statefulsets"]),
    ("batch", &["cronjobs", "jobs"]),
    ("networking.k8s.io", &["ingresses", "networkpolicies"]),
    (
        PLACEMENT,
        &[
            "resourceenvelopes",
            "resourceoverrides",
            "resourceplacementdisruptionbudgets",
            "resourceplacementevictions",
            "resourceplacements",
            "stagedupdateruns",
            "stagedupdatestrategies",
        ],
    ),
    (OCM_CLUSTER, &["managedclustersetbindings", "placements"]),
    (OCM_WORK, &["manifestworkreplicasets", "manifestworks"]),
];

/// The label that aggregates a ClusterRole into `name` (`admin`, `edit`, `view`).
pub fn aggregate_label(name: &str) -> String {
    format!("rbac.authorization.k8s.io/aggregate-to-{name}")
}

fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> Role {
    Role {
        kind: RoleKind::ClusterRole,
        namespace: String::new(),
        name: name.to_string(),
        labels: Default::default(),
        rules,
        aggregation: None,
    }
}

fn aggregated(name: &str, into: Option<&str>) -> Role {
    let mut role = cluster_role(name, Vec::new());
    role.aggregation =
        Some(AggregationRule { cluster_role_selectors: vec![LabelSelector::label(&aggregate_label(name), "true")] });
    if let Some(into) = into {
        role.labels.insert(aggregate_label(into), "true".into());
    }
    role
}

fn labeled(mut role: Role, into: &str) -> Role {
    role.labels.insert(aggregate_label(into), "true".into());
    role
}

/// One rule per group of `table` with `verbs`, also on each resource's
/// `status` subresource when `status`.
fn rules_of(table: &[(&str, &[&str])], verbs: &[&str], status: bool) -> Vec<PolicyRule> {
    table
        .iter()
        .map(|(group, resources)| {
            let mut all: Vec<String> = resources.iter().map(|r| r.to_string()).collect();
            if status {
                all.extend(resources.iter().map(|r| format!("{r}/status")));
            }
            PolicyRule {
                verbs: verbs.iter().map(|v| v.to_string()).collect(),
                api_groups: vec![group.to_string()],
                resources: all,
                ..PolicyRule::default()
            }
        })
        .collect()
}

/// `edit`'s own rules: writing tenant kinds, and reading Secrets (which
/// `view` does not, as in Kubernetes).
fn edit_rules() -> Vec<PolicyRule> {
    let mut rules = rules_of(EDIT_RESOURCES, WRITE, false);
    rules.push(PolicyRule::resource(READ, &[""], &["secrets"]));
    rules
}

/// The built-in ClusterRoles.
pub fn cluster_roles() -> Vec<Role> {
    let rbac_write: Vec<&str> = READ.iter().chain(WRITE).copied().collect();
    vec![
        cluster_role(
            "cluster-admin",
            vec![PolicyRule::resource(&["*"], &["*"], &["*"]), PolicyRule::non_resource(&["*"], &["*"])],
        ),
        cluster_role(
            "fleet:viewer",
            vec![
                PolicyRule::resource(READ, &["*"], &["*"]),
                PolicyRule::non_resource(&["get"], &[PATH_CLUSTER_STATUS, PATH_HEARTBEATS]),
            ],
        ),
        cluster_role(
            "system:discovery",
            vec![
                PolicyRule::non_resource(
                    &["get"],
                    &[
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/openapi",
                        "/openapi/*",
                        "/version",
                        "/version/",
                        "/healthz",
                        "/livez",
                        "/readyz",
                    ],
                ),
                // Where each node serves the Kubernetes API (`fleetctl kubeconfig`).
                PolicyRule::resource(&["get", "list"], &["fleet.internal"], &["nodeendpoint", "nodeendpoints"]),
            ],
        ),
        cluster_role(
            "system:basic-user",
            vec![PolicyRule::resource(
                &["create"],
                &["authorization.k8s.io"],
                &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            )],
        ),
        aggregated("admin", None),
        aggregated("edit", Some("admin")),
        aggregated("view", Some("edit")),
        labeled(cluster_role("system:aggregate-to-view", rules_of(VIEW_RESOURCES, READ, true)), "view"),
        labeled(cluster_role("system:aggregate-to-edit", edit_rules()), "edit"),
        labeled(
            cluster_role(
                "system:aggregate-to-admin",
                vec![
                    PolicyRule::resource(&rbac_write, &[GROUP], &["roles", "rolebindings"]),
                    // Approving a stage of a staged update is a status write.
                    PolicyRule::resource(&["update", "patch"], &[PLACEMENT], &["approvalrequests/status"]),
                ],
            ),
            "admin",
        ),
    ]
}

fn cluster_binding(name: &str, role: &str, group: &str) -> Binding {
    Binding {
        kind: BindingKind::ClusterRoleBinding,
        namespace: String::new(),
        name: name.to_string(),
        role_ref: RoleRef { api_group: GROUP.into(), kind: "ClusterRole".into(), name: role.into() },
        subjects: vec![Subject::group(group)],
    }
}

/// The built-in ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Binding> {
    vec![
        cluster_binding("cluster-admin", "cluster-admin", MASTERS_GROUP),
        cluster_binding("fleet:viewer", "fleet:viewer", VIEWERS_GROUP),
        cluster_binding("system:discovery", "system:discovery", AUTHENTICATED_GROUP),
        cluster_binding("system:basic-user", "system:basic-user", AUTHENTICATED_GROUP),
    ]
}

/// The policy of the built-in roles and bindings followed by `roles` and
/// `bindings` (stored ones): a stored object named like a built-in one is
/// ignored.
pub fn policy(roles: Vec<Role>, bindings: Vec<Binding>) -> crate::Policy {
    let all_roles = cluster_roles().into_iter().chain(roles).collect();
    let all_bindings = cluster_role_bindings().into_iter().chain(bindings).collect();
    crate::Policy::new(all_roles, all_bindings)
}
