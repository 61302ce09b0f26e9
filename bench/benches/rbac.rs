//! Criterion benchmark of one RBAC decision (`fleet-rbac`) in a hub holding
//! 1,000 roles and 1,000 bindings (500 namespaces, each with a Role and a
//! RoleBinding to a team group, plus 500 ClusterRoles and
//! ClusterRoleBindings to other users), with the built-in policy: the cost
//! every request of a user pays. Also the cost of building the policy (paid
//! once per change of an RBAC object). Run with
//! `cargo bench -p fleet-bench --bench rbac`.

use criterion::{criterion_group, criterion_main, Criterion};
use fleet_rbac::{
    bootstrap, Attributes, Binding, BindingKind, Policy, PolicyRule, Role, RoleKind, RoleRef, Subject, UserInfo, GROUP,
};

const NAMESPACES: usize = 500;

fn objects() -> (Vec<Role>, Vec<Binding>) {
    let mut roles = Vec::new();
    let mut bindings = Vec::new();
    for i in 0..NAMESPACES {
        let namespace = format!("team-{i}");
        roles.push(Role {
            kind: RoleKind::Role,
            namespace: namespace.clone(),
            name: "tenant".into(),
            labels: Default::default(),
            rules: vec![
                PolicyRule::resource(&["*"], &["placement.kubernetes-fleet.io"], &["resourceplacements"]),
                PolicyRule::resource(&["get", "list", "watch", "create", "update"], &[""], &["configmaps", "secrets"]),
            ],
            aggregation: None,
        });
        bindings.push(Binding {
            kind: BindingKind::RoleBinding,
            namespace: namespace.clone(),
            name: "tenant".into(),
            role_ref: RoleRef { api_group: GROUP.into(), kind: "Role".into(), name: "tenant".into() },
            subjects: vec![Subject::group(&namespace)],
        });
        roles.push(Role {
            kind: RoleKind::ClusterRole,
            namespace: String::new(),
            name: format!("reader-{i}"),
            labels: Default::default(),
            rules: vec![PolicyRule::resource(&["get"], &["apps"], &["deployments"]).named(&[&format!("d{i}")])],
            aggregation: None,
        });
        bindings.push(Binding {
            kind: BindingKind::ClusterRoleBinding,
            namespace: String::new(),
            name: format!("reader-{i}"),
            role_ref: RoleRef { api_group: GROUP.into(), kind: "ClusterRole".into(), name: format!("reader-{i}") },
            subjects: vec![Subject::user(&format!("user-{i}"))],
        });
    }
    (roles, bindings)
}

fn decide(c: &mut Criterion) {
    let (roles, bindings) = objects();
    let policy: Policy = bootstrap::policy(roles.clone(), bindings.clone());
    let user = UserInfo::new("alice", &["team-250", bootstrap::AUTHENTICATED_GROUP]);
    let allowed = Attributes::resource("create", "", "configmaps", "team-250", "");
    let refused = Attributes::resource("list", "", "configmaps", "team-251", "");
    assert!(policy.authorize(&user, &allowed).allowed);
    assert!(!policy.authorize(&user, &refused).allowed);
    c.bench_function("rbac_decision_1000_objects_allowed", |b| {
        b.iter(|| std::hint::black_box(policy.authorize(&user, &allowed)))
    });
    c.bench_function("rbac_decision_1000_objects_refused", |b| {
        b.iter(|| std::hint::black_box(policy.authorize(&user, &refused)))
    });
    c.bench_function("rbac_policy_build_1000_objects", |b| {
        b.iter(|| std::hint::black_box(bootstrap::policy(roles.clone(), bindings.clone())))
    });
}

criterion_group!(benches, decide);
criterion_main!(benches);
