//! Decisions over small policies: bindings, scoping, aggregation,
//! subjects, escalation, rules reviews and the built-in roles.

use fleet_rbac::bootstrap::{self, AUTHENTICATED_GROUP, MASTERS_GROUP, VIEWERS_GROUP};
use fleet_rbac::escalation::{check_binding, check_role};
use fleet_rbac::{
    AggregationRule, Attributes, Binding, BindingKind, LabelSelector, Policy, PolicyRule, Role, RoleKind, RoleRef,
    Subject, UserInfo, GROUP,
};

const PLACEMENT: &str = "placement.kubernetes-fleet.io";

fn role(namespace: &str, name: &str, rules: Vec<PolicyRule>) -> Role {
    let kind = if namespace.is_empty() { RoleKind::ClusterRole } else { RoleKind::Role };
    Role { kind, namespace: namespace.into(), name: name.into(), labels: Default::default(), rules, aggregation: None }
}

fn binding(namespace: &str, name: &str, role_kind: &str, role: &str, subjects: Vec<Subject>) -> Binding {
    let kind = if namespace.is_empty() { BindingKind::ClusterRoleBinding } else { BindingKind::RoleBinding };
    Binding {
        kind,
        namespace: namespace.into(),
        name: name.into(),
        role_ref: RoleRef { api_group: GROUP.into(), kind: role_kind.into(), name: role.into() },
        subjects,
    }
}

fn alice() -> UserInfo {
    UserInfo::new("alice", &["team-a", AUTHENTICATED_GROUP])
}

fn tenant_rules() -> Vec<PolicyRule> {
    vec![
        PolicyRule::resource(&["*"], &[PLACEMENT], &["resourceplacements"]),
        PolicyRule::resource(&["get", "list", "watch", "create", "update", "patch", "delete"], &[""], &["configmaps"]),
    ]
}

/// alice (through group team-a) holds the tenant role in team-a.
fn tenant_policy() -> Policy {
    bootstrap::policy(
        vec![role("team-a", "tenant", tenant_rules())],
        vec![binding("team-a", "tenant", "Role", "tenant", vec![Subject::group("team-a")])],
    )
}

fn allowed(policy: &Policy, user: &UserInfo, attributes: Attributes) -> bool {
    policy.authorize(user, &attributes).allowed
}

#[test]
fn a_role_binding_grants_in_its_namespace_only() {
    let policy = tenant_policy();
    let user = alice();
    assert!(allowed(&policy, &user, Attributes::resource("create", "", "configmaps", "team-a", "")));
    assert!(allowed(&policy, &user, Attributes::resource("list", PLACEMENT, "resourceplacements", "team-a", "")));
    assert!(!allowed(&policy, &user, Attributes::resource("get", "", "configmaps", "team-b", "x")));
    assert!(!allowed(&policy, &user, Attributes::resource("list", "", "configmaps", "", "")), "all namespaces");
    let crp = Attributes::resource("create", PLACEMENT, "clusterresourceplacements", "", "");
    let decision = policy.authorize(&user, &crp);
    assert!(!decision.allowed);
    assert_eq!(
        decision.reason,
        "user \"alice\" (groups [\"team-a\", \"system:authenticated\"]) cannot create resource \
         \"clusterresourceplacements\" in API group \"placement.kubernetes-fleet.io\" at the cluster scope"
    );
    let ok = policy.authorize(&user, &Attributes::resource("get", "", "configmaps", "team-a", "x"));
    assert!(ok.reason.contains("RoleBinding \"team-a/tenant\" of Role \"tenant\""), "{}", ok.reason);
    // Subresources are their own resources.
    let status = Attributes::resource("update", "", "configmaps", "team-a", "x").on_subresource("status");
    assert!(!allowed(&policy, &user, status));
}

#[test]
fn a_role_binding_to_a_cluster_role_is_scoped_to_its_namespace() {
    let policy = bootstrap::policy(
        Vec::new(),
        vec![binding("team-a", "editors", "ClusterRole", "edit", vec![Subject::user("alice")])],
    );
    let user = alice();
    assert!(allowed(&policy, &user, Attributes::resource("create", PLACEMENT, "resourceplacements", "team-a", "")));
    assert!(!allowed(&policy, &user, Attributes::resource("create", PLACEMENT, "resourceplacements", "team-b", "")));
    assert!(!allowed(&policy, &user, Attributes::resource("create", PLACEMENT, "clusterresourceplacements", "", "")));
    // edit holds view (aggregated), but not Roles (admin's).
    assert!(allowed(&policy, &user, Attributes::resource("watch", PLACEMENT, "resourcesnapshots", "team-a", "")));
    assert!(!allowed(&policy, &user, Attributes::resource("create", PLACEMENT, "resourcesnapshots", "team-a", "")));
    assert!(!allowed(&policy, &user, Attributes::resource("create", GROUP, "roles", "team-a", "")));
}

#[test]
fn cluster_role_bindings_grant_everywhere_and_urls() {
    let policy = bootstrap::policy(Vec::new(), Vec::new());
    let admin = UserInfo::new("admin", &[MASTERS_GROUP, AUTHENTICATED_GROUP]);
    let viewer = UserInfo::new("viewer", &[VIEWERS_GROUP, AUTHENTICATED_GROUP]);
    let anyone = UserInfo::new("bob", &[AUTHENTICATED_GROUP]);
    let delete = Attributes::resource("delete", "apps", "deployments", "x", "web");
    assert!(allowed(&policy, &admin, delete.clone()));
    assert!(!allowed(&policy, &viewer, delete));
    assert!(allowed(&policy, &viewer, Attributes::resource("list", "anything.example", "widgets", "", "")));
    assert!(allowed(&policy, &viewer, Attributes::path("get", bootstrap::PATH_CLUSTER_STATUS)));
    assert!(!allowed(&policy, &viewer, Attributes::path("create", bootstrap::PATH_SNAPSHOT)));
    assert!(allowed(&policy, &admin, Attributes::path("create", bootstrap::PATH_SNAPSHOT)));
    assert!(allowed(&policy, &anyone, Attributes::path("get", "/apis/apps/v1")));
    assert!(!allowed(&policy, &anyone, Attributes::path("get", bootstrap::PATH_CLUSTER_STATUS)));
    let review = Attributes::resource("create", "authorization.k8s.io", "selfsubjectrulesreviews", "", "");
    assert!(allowed(&policy, &anyone, review));
    assert!(!allowed(&policy, &anyone, Attributes::resource("list", "", "configmaps", "x", "")));
}

#[test]
fn url_rules_of_a_role_binding_grant_nothing() {
    let urls = role("", "urls", vec![PolicyRule::non_resource(&["get"], &["/secret-path"])]);
    let policy =
        bootstrap::policy(vec![urls], vec![binding("a", "b", "ClusterRole", "urls", vec![Subject::user("alice")])]);
    assert!(!allowed(&policy, &alice(), Attributes::path("get", "/secret-path")));
    assert!(policy
        .rules_for(&alice(), "a")
        .non_resource_rules
        .iter()
        .all(|r| r.non_resource_urls[0] != "/secret-path"));
}

#[test]
fn service_account_subjects_default_to_the_binding_namespace() {
    let sa = Subject {
        kind: "ServiceAccount".into(),
        api_group: String::new(),
        name: "deployer".into(),
        namespace: String::new(),
    };
    let policy = bootstrap::policy(
        vec![role("team-a", "tenant", tenant_rules())],
        vec![binding("team-a", "sa", "Role", "tenant", vec![sa])],
    );
    let user = UserInfo::new("system:serviceaccount:team-a:deployer", &[AUTHENTICATED_GROUP]);
    assert!(allowed(&policy, &user, Attributes::resource("create", "", "configmaps", "team-a", "")));
    let other = UserInfo::new("system:serviceaccount:team-b:deployer", &[AUTHENTICATED_GROUP]);
    assert!(!allowed(&policy, &other, Attributes::resource("create", "", "configmaps", "team-a", "")));
}

#[test]
fn a_binding_to_a_missing_role_grants_nothing() {
    let policy = bootstrap::policy(Vec::new(), vec![binding("a", "b", "Role", "absent", vec![Subject::user("alice")])]);
    assert!(!allowed(&policy, &alice(), Attributes::resource("get", "", "configmaps", "a", "x")));
}

#[test]
fn aggregation_is_the_union_of_the_selected_roles_and_follows_labels() {
    let mut widgets = role("", "widget-viewer", vec![PolicyRule::resource(&["get"], &["example.com"], &["widgets"])]);
    widgets.labels.insert(bootstrap::aggregate_label("view"), "true".into());
    let mut custom = role("", "custom", vec![PolicyRule::resource(&["*"], &["*"], &["*"])]);
    custom.aggregation = Some(AggregationRule {
        cluster_role_selectors: vec![LabelSelector::label("team", "a"), LabelSelector::label("team", "b")],
    });
    let mut a = role("", "a", vec![PolicyRule::resource(&["get"], &[""], &["pods"])]);
    a.labels.insert("team".into(), "a".into());
    let mut b = role("", "b", vec![PolicyRule::resource(&["list"], &[""], &["pods"])]);
    b.labels.insert("team".into(), "b".into());
    let policy = bootstrap::policy(vec![widgets, custom, a, b], Vec::new());
    let view = policy.cluster_role_rules("view").unwrap();
    assert!(view.contains(&PolicyRule::resource(&["get"], &["example.com"], &["widgets"])));
    // Transitively: admin aggregates edit, which aggregates view.
    let admin = policy.cluster_role_rules("admin").unwrap();
    assert!(admin.contains(&PolicyRule::resource(&["get"], &["example.com"], &["widgets"])));
    // An aggregated role's own rules are replaced by the selected ones.
    let custom = policy.cluster_role_rules("custom").unwrap();
    assert_eq!(
        custom,
        &[PolicyRule::resource(&["get"], &[""], &["pods"]), PolicyRule::resource(&["list"], &[""], &["pods"])]
    );
}

#[test]
fn aggregation_cycles_terminate() {
    let mut x = role("", "x", vec![PolicyRule::resource(&["get"], &[""], &["pods"])]);
    x.labels.insert("agg".into(), "y".into());
    x.aggregation = Some(AggregationRule { cluster_role_selectors: vec![LabelSelector::label("agg", "x")] });
    let mut y = role("", "y", Vec::new());
    y.labels.insert("agg".into(), "x".into());
    y.aggregation = Some(AggregationRule { cluster_role_selectors: vec![LabelSelector::label("agg", "y")] });
    let policy = Policy::new(vec![x, y], Vec::new());
    assert!(policy.cluster_role_rules("x").unwrap().is_empty());
}

#[test]
fn stored_objects_cannot_replace_built_in_ones() {
    let weak = role("", "cluster-admin", Vec::new());
    let policy = bootstrap::policy(vec![weak], Vec::new());
    assert_eq!(policy.cluster_role_rules("cluster-admin").unwrap().len(), 2);
}

#[test]
fn escalation_is_refused_unless_held_or_escalate() {
    let policy = tenant_policy();
    let user = alice();
    // A role within what alice holds in team-a: allowed.
    let within = role("team-a", "cm-reader", vec![PolicyRule::resource(&["get"], &[""], &["configmaps"])]);
    assert!(check_role(&policy, &user, &within).is_ok());
    // Secrets alice cannot read: refused, naming the missing rule.
    let secrets = role("team-a", "secrets", vec![PolicyRule::resource(&["get"], &[""], &["secrets", "configmaps"])]);
    let err = check_role(&policy, &user, &secrets).unwrap_err();
    assert_eq!(err.missing, vec![PolicyRule::resource(&["get"], &[""], &["secrets"])]);
    assert!(err.message.contains("attempting to grant RBAC permissions not currently held"), "{}", err.message);
    // The same rules in another namespace: not held there.
    assert!(check_role(&policy, &user, &role("team-b", "cm-reader", within.rules.clone())).is_err());
    // Binding: to a role alice holds all of, fine; to cluster-admin, refused.
    let ok = binding("team-a", "b", "Role", "tenant", vec![Subject::user("bob")]);
    assert!(check_binding(&policy, &user, &ok).is_ok());
    let bad = binding("team-a", "b", "ClusterRole", "cluster-admin", vec![Subject::user("alice")]);
    assert!(check_binding(&policy, &user, &bad).is_err());
    let missing = binding("team-a", "b", "Role", "absent", vec![Subject::user("alice")]);
    assert!(check_binding(&policy, &user, &missing).unwrap_err().message.contains("Not found"));
    // escalate and bind verbs lift the checks.
    let lifted = bootstrap::policy(
        vec![
            role("team-a", "tenant", tenant_rules()),
            role(
                "team-a",
                "rbac-manager",
                vec![
                    PolicyRule::resource(&["escalate"], &[GROUP], &["roles"]),
                    PolicyRule::resource(&["bind"], &[GROUP], &["clusterroles"]).named(&["cluster-admin"]),
                ],
            ),
        ],
        vec![
            binding("team-a", "tenant", "Role", "tenant", vec![Subject::group("team-a")]),
            binding("team-a", "mgr", "Role", "rbac-manager", vec![Subject::group("team-a")]),
        ],
    );
    assert!(check_role(&lifted, &user, &secrets).is_ok());
    assert!(check_binding(&lifted, &user, &bad).is_ok());
    // Admins hold everything.
    let admin = UserInfo::new("admin", &[MASTERS_GROUP]);
    let mut aggregating = role("", "agg", Vec::new());
    aggregating.aggregation = Some(AggregationRule::default());
    assert!(check_role(&policy, &admin, &aggregating).is_ok());
    assert!(check_role(&policy, &user, &aggregating).unwrap_err().message.contains("aggregationRule"));
}

#[test]
fn rules_review_lists_what_is_held() {
    let policy = tenant_policy();
    let review = policy.rules_for(&alice(), "team-a");
    for rule in tenant_rules() {
        assert!(review.resource_rules.contains(&rule), "{rule:?}");
    }
    assert!(review.non_resource_rules.iter().any(|r| r.non_resource_urls.contains(&"/api".to_string())));
    let elsewhere = policy.rules_for(&alice(), "team-b");
    assert!(!elsewhere.resource_rules.iter().any(|r| r.resources.contains(&"configmaps".to_string())));
}

#[test]
fn default_roles_cover_the_tenant_kinds_of_the_registry() {
    let policy = bootstrap::policy(Vec::new(), Vec::new());
    let view = policy.cluster_role_rules("view").unwrap();
    let edit = policy.cluster_role_rules("edit").unwrap();
    // Kinds a tenant never reads or writes in its namespace: member
    // agents' Work, and the hub's own.
    let hub_only = ["works"];
    let groups = [PLACEMENT, "cluster.open-cluster-management.io", "work.open-cluster-management.io"];
    for kind in fleet_api::kinds::KINDS {
        if kind.scope != fleet_api::Scope::Namespaced
            || !groups.contains(&kind.group)
            || hub_only.contains(&kind.plural)
        {
            continue;
        }
        let get = Attributes::resource("get", kind.group, kind.plural, "ns", "x");
        assert!(view.iter().any(|r| fleet_rbac::matches_request(r, &get)), "view does not read {}", kind.plural);
        assert!(edit.iter().any(|r| fleet_rbac::matches_request(r, &get)), "edit does not read {}", kind.plural);
    }
    let secret = Attributes::resource("get", "", "secrets", "ns", "x");
    assert!(!view.iter().any(|r| fleet_rbac::matches_request(r, &secret)), "view reads no Secrets");
    assert!(edit.iter().any(|r| fleet_rbac::matches_request(r, &secret)));
}
