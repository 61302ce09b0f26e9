//! Properties over random policies drawn from a small vocabulary (so
//! rules, subjects and requests often meet):
//!
//! - the indexed decision equals a plain scan of every binding;
//! - a rule set that covers a rule allows every request the rule allows;
//! - a role that passes the escalation check allows nothing its author
//!   cannot do in that namespace;
//! - an aggregated ClusterRole allows exactly what one of its selected
//!   roles allows.

use fleet_rbac::escalation::check_role;
use fleet_rbac::{
    covers, matches_request, AggregationRule, Attributes, Binding, BindingKind, LabelSelector, Policy, PolicyRule,
    Role, RoleKind, RoleRef, Subject, Target, UserInfo, GROUP,
};
use proptest::prelude::*;

const VERBS: &[&str] = &["get", "list", "create", "delete", "*"];
const GROUPS: &[&str] = &["", "apps", "*"];
const RESOURCES: &[&str] = &["pods", "pods/status", "deployments", "*/status", "*"];
const NAMES: &[&str] = &["a", "b"];
const URLS: &[&str] = &["/healthz", "/api", "/api/*", "*"];
const NAMESPACES: &[&str] = &["x", "y"];
const USERS: &[&str] = &["alice", "bob"];
const USER_GROUPS: &[&str] = &["g1", "g2"];

fn pick(items: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(items).prop_map(str::to_string)
}

fn some(items: &'static [&'static str]) -> impl Strategy<Value = Vec<String>> {
    prop::sample::subsequence(items, 1..=2).prop_map(|v| v.into_iter().map(str::to_string).collect())
}

fn resource_rule() -> impl Strategy<Value = PolicyRule> {
    (some(VERBS), some(GROUPS), some(RESOURCES), prop::sample::subsequence(NAMES, 0..=1)).prop_map(
        |(verbs, api_groups, resources, names)| PolicyRule {
            verbs,
            api_groups,
            resources,
            resource_names: names.into_iter().map(str::to_string).collect(),
            non_resource_urls: Vec::new(),
        },
    )
}

fn rule() -> impl Strategy<Value = PolicyRule> {
    prop_oneof![
        3 => resource_rule(),
        1 => (some(VERBS), some(URLS)).prop_map(|(verbs, urls)| PolicyRule {
            verbs,
            non_resource_urls: urls,
            ..PolicyRule::default()
        }),
    ]
}

fn request() -> impl Strategy<Value = Attributes> {
    let resource = (
        pick(VERBS),
        pick(&["", "apps"]),
        pick(&["pods", "deployments"]),
        pick(&["", "status"]),
        pick(&["", "a", "b"]),
        pick(&["", "x", "y"]),
    )
        .prop_map(|(verb, group, resource, sub, name, ns)| {
            Attributes::resource(&verb, &group, &resource, &ns, &name).on_subresource(&sub)
        });
    let path =
        (pick(VERBS), pick(&["/healthz", "/api", "/api/v1", "/apis"])).prop_map(|(v, p)| Attributes::path(&v, &p));
    prop_oneof![4 => resource, 1 => path]
}

fn subject() -> impl Strategy<Value = Subject> {
    prop_oneof![pick(USERS).prop_map(|u| Subject::user(&u)), pick(USER_GROUPS).prop_map(|g| Subject::group(&g))]
}

/// Roles: `r0..r2` in each namespace, ClusterRoles `c0..c2`.
fn roles() -> impl Strategy<Value = Vec<Role>> {
    prop::collection::vec(prop::collection::vec(rule(), 0..3), 9).prop_map(|sets| {
        sets.into_iter()
            .enumerate()
            .map(|(i, rules)| {
                let (kind, namespace) = match i / 3 {
                    0 => (RoleKind::ClusterRole, ""),
                    1 => (RoleKind::Role, "x"),
                    _ => (RoleKind::Role, "y"),
                };
                let prefix = if kind == RoleKind::ClusterRole { "c" } else { "r" };
                // Namespaced roles cannot hold URL rules.
                let rules = rules
                    .into_iter()
                    .filter(|r| kind == RoleKind::ClusterRole || r.non_resource_urls.is_empty())
                    .collect();
                Role {
                    kind,
                    namespace: namespace.into(),
                    name: format!("{prefix}{}", i % 3),
                    labels: Default::default(),
                    rules,
                    aggregation: None,
                }
            })
            .collect()
    })
}

fn binding() -> impl Strategy<Value = Binding> {
    (
        pick(&["", "x", "y"]),
        pick(&["Role", "ClusterRole"]),
        0..4usize,
        prop::collection::vec(subject(), 1..3),
        0..1000u32,
    )
        .prop_map(|(namespace, role_kind, role, subjects, id)| {
            let kind = if namespace.is_empty() { BindingKind::ClusterRoleBinding } else { BindingKind::RoleBinding };
            let role_kind = if namespace.is_empty() { "ClusterRole".to_string() } else { role_kind };
            let prefix = if role_kind == "ClusterRole" { "c" } else { "r" };
            Binding {
                kind,
                namespace,
                name: format!("b{id}"),
                role_ref: RoleRef { api_group: GROUP.into(), kind: role_kind, name: format!("{prefix}{role}") },
                subjects,
            }
        })
}

fn user() -> impl Strategy<Value = UserInfo> {
    (pick(USERS), prop::sample::subsequence(USER_GROUPS, 0..=2))
        .prop_map(|(name, groups)| UserInfo { name, groups: groups.into_iter().map(str::to_string).collect() })
}

/// The reference: every binding, no index.
fn naive(roles: &[Role], bindings: &[Binding], user: &UserInfo, request: &Attributes) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    bindings.iter().filter(|b| seen.insert((b.kind, b.namespace.clone(), b.name.clone()))).any(|b| {
        let names_user = b.subjects.iter().any(|s| match s.kind.as_str() {
            "User" => s.name == user.name,
            _ => user.groups.contains(&s.name),
        });
        let applies = match b.kind {
            BindingKind::ClusterRoleBinding => true,
            BindingKind::RoleBinding => {
                matches!(request.target, Target::Resource { .. }) && request.namespace() == b.namespace
            }
        };
        let role_namespace = if b.role_ref.kind == "Role" { b.namespace.as_str() } else { "" };
        let rules = roles
            .iter()
            .find(|r| r.kind.as_str() == b.role_ref.kind && r.name == b.role_ref.name && r.namespace == role_namespace)
            .map(|r| r.rules.clone())
            .unwrap_or_default();
        names_user && applies && rules.iter().any(|r| matches_request(r, request))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_index_decides_as_a_scan(
        roles in roles(),
        bindings in prop::collection::vec(binding(), 0..12),
        user in user(),
        request in request(),
    ) {
        let policy = Policy::new(roles.clone(), bindings.clone());
        prop_assert_eq!(policy.authorize(&user, &request).allowed, naive(&roles, &bindings, &user, &request));
    }

    #[test]
    fn covered_rules_allow_nothing_more(owner in prop::collection::vec(rule(), 0..4), wanted in rule(), request in request()) {
        if covers(&owner, &wanted).is_empty() && matches_request(&wanted, &request) {
            prop_assert!(owner.iter().any(|o| matches_request(o, &request)));
        }
    }

    #[test]
    fn a_role_passing_the_escalation_check_grants_nothing_new(
        roles in roles(),
        bindings in prop::collection::vec(binding(), 0..12),
        user in user(),
        rules in prop::collection::vec(resource_rule(), 1..3),
        namespace in pick(NAMESPACES),
        request in request(),
    ) {
        let policy = Policy::new(roles, bindings);
        let new = Role { kind: RoleKind::Role, namespace: namespace.clone(), name: "new".into(), labels: Default::default(), rules, aggregation: None };
        let escalate = Attributes::resource("escalate", GROUP, "roles", &namespace, "new");
        if !policy.authorize(&user, &escalate).allowed && check_role(&policy, &user, &new).is_ok() {
            // The new role would be bound in `namespace`: requests there.
            if let Target::Resource { group, resource, subresource, name, .. } = &request.target {
                let here = Attributes::resource(&request.verb, group, resource, &namespace, name).on_subresource(subresource);
                if new.rules.iter().any(|r| matches_request(r, &here)) {
                    prop_assert!(policy.authorize(&user, &here).allowed, "{:?}", here);
                }
            }
        }
    }

    #[test]
    fn aggregation_is_a_union(sets in prop::collection::vec(prop::collection::vec(rule(), 0..3), 1..5), picked in prop::collection::vec(any::<bool>(), 5), request in request()) {
        let mut roles: Vec<Role> = sets.iter().enumerate().map(|(i, rules)| {
            let mut labels = std::collections::BTreeMap::new();
            if picked[i] {
                labels.insert("agg".to_string(), "yes".to_string());
            }
            Role { kind: RoleKind::ClusterRole, namespace: String::new(), name: format!("c{i}"), labels, rules: rules.clone(), aggregation: None }
        }).collect();
        roles.push(Role {
            kind: RoleKind::ClusterRole,
            namespace: String::new(),
            name: "union".into(),
            labels: Default::default(),
            rules: vec![PolicyRule::resource(&["*"], &["*"], &["*"])],
            aggregation: Some(AggregationRule { cluster_role_selectors: vec![LabelSelector::label("agg", "yes")] }),
        });
        let policy = Policy::new(roles, Vec::new());
        let union = policy.cluster_role_rules("union").unwrap();
        let expected = sets.iter().enumerate().any(|(i, rules)| picked[i] && rules.iter().any(|r| matches_request(r, &request)));
        prop_assert_eq!(union.iter().any(|r| matches_request(r, &request)), expected);
    }
}
