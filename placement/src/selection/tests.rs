use fleet_api::placement::{ResourceSelector, CLUSTER_RESOURCE_PLACEMENT, NAMESPACE_WITH_RESOURCES};
use fleet_api::LabelSelector;
use serde_json::json;

use super::*;

/// A hub made of a vector of objects.
struct Hub(Vec<Object>);

impl ResourceSource for Hub {
    fn list(&self, group: &str, kind: &str, namespace: Option<&str>) -> Vec<Object> {
        self.0
            .iter()
            .filter(|o| o.group() == group && o.kind == kind)
            .filter(|o| namespace.is_none() || o.metadata.namespace.as_deref() == namespace)
            .cloned()
            .collect()
    }

    fn namespace_contents(&self, namespace: &str) -> Vec<Object> {
        self.0.iter().filter(|o| o.metadata.namespace.as_deref() == Some(namespace)).cloned().collect()
    }
}

fn obj(v: serde_json::Value) -> Object {
    serde_json::from_value(v).unwrap()
}

fn ns(name: &str) -> Object {
    obj(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
}

fn ns_labelled(name: &str, k: &str, v: &str) -> Object {
    obj(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {k: v}}}))
}

fn cm(namespace: &str, name: &str) -> Object {
    obj(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": {"k": name}}),
    )
}

fn cluster_role(name: &str) -> Object {
    obj(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}}))
}

fn sel(group: &str, kind: &str) -> ResourceSelector {
    ResourceSelector { group: group.into(), version: "v1".into(), kind: kind.into(), ..Default::default() }
}

fn named(group: &str, kind: &str, name: &str) -> ResourceSelector {
    ResourceSelector { name: Some(name.into()), ..sel(group, kind) }
}

fn spec(selectors: Vec<ResourceSelector>) -> PlacementSpec {
    PlacementSpec { resource_selectors: selectors, ..Default::default() }
}

fn crp(hub: &Hub, selectors: Vec<ResourceSelector>) -> Vec<Object> {
    select_resources(CLUSTER_RESOURCE_PLACEMENT, None, &spec(selectors), hub)
}

fn rp(hub: &Hub, namespace: &str, selectors: Vec<ResourceSelector>) -> Vec<Object> {
    select_resources(RESOURCE_PLACEMENT, Some(namespace), &spec(selectors), hub)
}

fn names(objects: &[Object]) -> Vec<String> {
    objects
        .iter()
        .map(|o| match o.metadata.namespace.as_deref() {
            Some(n) => format!("{}/{n}/{}", o.kind, o.metadata.name),
            None => format!("{}/{}", o.kind, o.metadata.name),
        })
        .collect()
}

#[test]
fn selects_by_name() {
    let hub = Hub(vec![ns("web"), ns("db"), cm("web", "a")]);
    let got = crp(
        &hub,
        vec![ResourceSelector { selection_scope: Some(NAMESPACE_ONLY.into()), ..named("", "Namespace", "web") }],
    );
    assert_eq!(names(&got), ["Namespace/web"]);
}

/// A hub whose `list` sees nothing: only `get` finds objects.
struct GetOnly(Hub);

impl ResourceSource for GetOnly {
    fn list(&self, _: &str, _: &str, _: Option<&str>) -> Vec<Object> {
        Vec::new()
    }

    fn namespace_contents(&self, namespace: &str) -> Vec<Object> {
        self.0.namespace_contents(namespace)
    }

    fn get(&self, group: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<Object> {
        self.0.get(group, kind, namespace, name)
    }
}

#[test]
fn a_named_selector_reads_its_one_object_not_the_whole_kind() {
    let hub = GetOnly(Hub(vec![ns("web"), ns("db"), cm("web", "a")]));
    let select = |s| select_resources(CLUSTER_RESOURCE_PLACEMENT, None, &spec(vec![s]), &hub);
    assert_eq!(names(&select(named("", "Namespace", "web"))), ["Namespace/web", "ConfigMap/web/a"]);
    assert!(select(sel("", "Namespace")).is_empty(), "an unnamed selector lists the kind");
}

#[test]
fn selects_by_label_selector() {
    let hub = Hub(vec![ns_labelled("a", "env", "prod"), ns_labelled("b", "env", "dev"), ns("c")]);
    let s = ResourceSelector {
        label_selector: Some(LabelSelector::parse("env=prod").unwrap()),
        selection_scope: Some(NAMESPACE_ONLY.into()),
        ..sel("", "Namespace")
    };
    assert_eq!(names(&crp(&hub, vec![s])), ["Namespace/a"]);
}

#[test]
fn selector_without_name_or_labels_selects_every_object_of_the_kind() {
    let hub = Hub(vec![cluster_role("b"), cluster_role("a"), ns("x")]);
    assert_eq!(
        names(&crp(&hub, vec![sel("rbac.authorization.k8s.io", "ClusterRole")])),
        ["ClusterRole/a", "ClusterRole/b"]
    );
}

#[test]
fn version_is_ignored_when_matching() {
    let hub = Hub(vec![cluster_role("a")]);
    let s = ResourceSelector { version: "v1beta1".into(), ..named("rbac.authorization.k8s.io", "ClusterRole", "a") };
    assert_eq!(crp(&hub, vec![s]).len(), 1);
}

#[test]
fn namespace_with_resources_brings_its_contents_namespace_only_does_not() {
    let hub = Hub(vec![ns("web"), cm("web", "a"), cm("web", "b"), cm("other", "c"), ns("other")]);
    let with =
        ResourceSelector { selection_scope: Some(NAMESPACE_WITH_RESOURCES.into()), ..named("", "Namespace", "web") };
    assert_eq!(names(&crp(&hub, vec![with])), ["Namespace/web", "ConfigMap/web/a", "ConfigMap/web/b"]);
    // The default scope is NamespaceWithResources.
    assert_eq!(crp(&hub, vec![named("", "Namespace", "web")]).len(), 3);
    let only = ResourceSelector { selection_scope: Some(NAMESPACE_ONLY.into()), ..named("", "Namespace", "web") };
    assert_eq!(names(&crp(&hub, vec![only])), ["Namespace/web"]);
}

#[test]
fn reserved_namespaces_and_their_contents_are_skipped() {
    let hub = Hub(vec![
        ns("kube-system"),
        ns("fleet-member-a"),
        ns("default"),
        ns("app"),
        cm("kube-system", "x"),
        cm("default", "y"),
        cm("app", "z"),
    ]);
    assert_eq!(names(&crp(&hub, vec![sel("", "Namespace")])), ["Namespace/app", "ConfigMap/app/z"]);
    assert!(rp(&hub, "default", vec![sel("", "ConfigMap")]).is_empty());
    assert!(rp(&hub, "kube-system", vec![sel("", "ConfigMap")]).is_empty());
    assert!(is_reserved_namespace("kube-public") && is_reserved_namespace("fleet-system"));
    assert!(!is_reserved_namespace("kubernetes") && !is_reserved_namespace("defaults"));
}

#[test]
fn a_reserved_namespace_selected_with_its_contents_is_a_problem() {
    let hub = Hub(vec![ns("kube-system"), ns_labelled("default", "team", "a"), ns_labelled("app", "team", "a")]);
    let problem = |selectors| select(CLUSTER_RESOURCE_PLACEMENT, None, &spec(selectors), &hub).problem;
    assert_eq!(
        problem(vec![named("", "Namespace", "kube-system")]).as_deref(),
        Some("namespace kube-system is not allowed to propagate")
    );
    let by_label =
        ResourceSelector { label_selector: Some(LabelSelector::parse("team=a").unwrap()), ..sel("", "Namespace") };
    assert_eq!(problem(vec![by_label]).as_deref(), Some("namespace default is not allowed to propagate"));
    // Without its contents a reserved namespace is only left out, as KubeFleet does.
    let only =
        ResourceSelector { selection_scope: Some(NAMESPACE_ONLY.into()), ..named("", "Namespace", "kube-system") };
    assert_eq!(problem(vec![only]), None);
    assert_eq!(problem(vec![named("", "Namespace", "app")]), None);
    // Named, it is refused even when the hub has no such namespace.
    assert_eq!(
        problem(vec![named("", "Namespace", "fleet-system")]).as_deref(),
        Some("namespace fleet-system is not allowed to propagate")
    );
}

#[test]
fn what_the_hubs_controllers_make_is_left_behind() {
    let owner = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1"}]);
    let hub = Hub(vec![
        ns("app"),
        obj(
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-1", "namespace": "app", "ownerReferences": owner}}),
        ),
        obj(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "alone", "namespace": "app"}})),
        obj(
            json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "rev", "namespace": "app", "ownerReferences": owner}}),
        ),
        cm("app", "kube-root-ca.crt"),
        cm("app", "settings"),
        obj(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "app"}})),
        obj(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder", "namespace": "app"}})),
        obj(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tok", "namespace": "app"}, "type": "kubernetes.io/service-account-token"}),
        ),
        obj(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "app"}, "type": "Opaque"}),
        ),
        obj(
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "app"}}),
        ),
        obj(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "app"}})),
        obj(json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": "app"}})),
        obj(json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "external", "namespace": "app"}})),
        obj(
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web-x", "namespace": "app", "labels": {"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}}}),
        ),
        obj(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "app"}})),
        obj(
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l", "namespace": "app"}}),
        ),
    ]);
    let mut got = names(&crp(&hub, vec![named("", "Namespace", "app")]));
    got.sort();
    assert_eq!(
        got,
        [
            "ConfigMap/app/settings",
            "Endpoints/app/external",
            "Namespace/app",
            "ReplicaSet/app/alone",
            "Secret/app/creds",
            "Service/app/web",
            "ServiceAccount/app/builder",
        ]
    );
}

#[test]
fn an_object_selected_twice_is_a_problem() {
    let hub = Hub(vec![ns("app"), cm("app", "a"), cluster_role("admin")]);
    let twice = vec![named("", "Namespace", "app"), named("", "Namespace", "app")];
    let got = select(CLUSTER_RESOURCE_PLACEMENT, None, &spec(twice), &hub);
    assert_eq!(names(&got.resources), ["Namespace/app", "ConfigMap/app/a"]);
    assert!(
        got.problem.as_deref().is_some_and(|p| p.starts_with("found duplicate resource {Group: Version:v1 Kind:")),
        "{:?}",
        got.problem
    );
    let by_name_and_kind = vec![
        named("rbac.authorization.k8s.io", "ClusterRole", "admin"),
        sel("rbac.authorization.k8s.io", "ClusterRole"),
    ];
    let problem = select(CLUSTER_RESOURCE_PLACEMENT, None, &spec(by_name_and_kind), &hub).problem;
    assert_eq!(
        problem.as_deref(),
        Some("found duplicate resource {Group:rbac.authorization.k8s.io Version:v1 Kind:ClusterRole Name:admin Namespace:}")
    );
    let in_rp = vec![named("", "ConfigMap", "a"), sel("", "ConfigMap")];
    let problem = select(RESOURCE_PLACEMENT, Some("app"), &spec(in_rp), &hub).problem;
    assert_eq!(
        problem.as_deref(),
        Some("found duplicate resource {Group: Version:v1 Kind:ConfigMap Name:a Namespace:app}")
    );
    let distinct = vec![named("", "ConfigMap", "a"), named("", "Secret", "a")];
    assert_eq!(select(RESOURCE_PLACEMENT, Some("app"), &spec(distinct), &hub).problem, None);
}

#[test]
fn fleet_kinds_are_never_selected() {
    let crp_obj = obj(
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement", "metadata": {"name": "p"}}),
    );
    let mc = obj(
        json!({"apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster", "metadata": {"name": "m"}}),
    );
    let internal = obj(json!({"apiVersion": "x.fleet.internal/v1", "kind": "Lease", "metadata": {"name": "l"}}));
    let mcs = obj(
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "s"}}),
    );
    let rp_obj = obj(
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourcePlacement", "metadata": {"name": "r", "namespace": "app"}}),
    );
    let event = obj(json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "app"}}));
    let hub = Hub(vec![crp_obj, mc, internal, mcs, rp_obj, event, ns("app"), cm("app", "c")]);
    let got = crp(
        &hub,
        vec![
            sel(FLEET_PLACEMENT_GROUP, "ClusterResourcePlacement"),
            sel(FLEET_CLUSTER_GROUP, "MemberCluster"),
            sel("x.fleet.internal", "Lease"),
            sel(OCM_CLUSTER_GROUP, "ManagedClusterSet"),
            sel("", "Namespace"),
        ],
    );
    // The namespace's RP and Event stay behind; its ConfigMap goes.
    assert_eq!(names(&got), ["Namespace/app", "ConfigMap/app/c"]);
    assert!(rp(&hub, "app", vec![sel("", "Event"), sel(FLEET_PLACEMENT_GROUP, "ResourcePlacement")]).is_empty());
}

#[test]
fn objects_being_deleted_are_skipped() {
    let mut gone = cm("app", "gone");
    gone.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
    let mut gone_ns = ns("old");
    gone_ns.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
    let hub = Hub(vec![ns("app"), gone, cm("app", "kept"), gone_ns, cm("old", "x")]);
    assert_eq!(names(&crp(&hub, vec![sel("", "Namespace")])), ["Namespace/app", "ConfigMap/app/kept"]);
}

#[test]
fn crp_ignores_namespaced_kinds_and_namespaced_objects() {
    let odd =
        obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "app"}}));
    let global = obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "g"}}));
    let hub = Hub(vec![cm("app", "a"), odd, global]);
    assert!(crp(&hub, vec![sel("", "ConfigMap")]).is_empty());
    // A kind of unknown scope: only the objects without a namespace.
    assert_eq!(names(&crp(&hub, vec![sel("example.com", "Widget")])), ["Widget/g"]);
}

#[test]
fn rp_selects_only_its_own_namespace() {
    let hub = Hub(vec![ns("app"), cm("app", "a"), cm("other", "b"), cluster_role("r")]);
    assert_eq!(names(&rp(&hub, "app", vec![sel("", "ConfigMap")])), ["ConfigMap/app/a"]);
    assert!(rp(&hub, "app", vec![sel("", "Namespace")]).is_empty());
    assert!(rp(&hub, "app", vec![sel("rbac.authorization.k8s.io", "ClusterRole")]).is_empty());
    assert!(select_resources(RESOURCE_PLACEMENT, None, &spec(vec![sel("", "ConfigMap")]), &hub).is_empty());
}

#[test]
fn rp_drops_objects_a_sloppy_source_returns_from_other_namespaces() {
    struct Sloppy;
    impl ResourceSource for Sloppy {
        fn list(&self, _: &str, _: &str, _: Option<&str>) -> Vec<Object> {
            vec![cm("app", "a"), cm("other", "b")]
        }
        fn namespace_contents(&self, _: &str) -> Vec<Object> {
            Vec::new()
        }
    }
    let got = select_resources(RESOURCE_PLACEMENT, Some("app"), &spec(vec![sel("", "ConfigMap")]), &Sloppy);
    assert_eq!(names(&got), ["ConfigMap/app/a"]);
}

#[test]
fn cleaning_removes_server_fields_and_status() {
    let dirty = obj(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": "a", "namespace": "app", "uid": "u", "resourceVersion": "9", "generation": 2,
            "creationTimestamp": "t", "finalizers": ["f"], "labels": {"keep": "me"},
            "annotations": {"keep": "me", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "1"}]
        },
        "data": {"k": "v"}, "status": {"s": 1}, "managedFields": []
    }));
    let hub = Hub(vec![dirty]);
    let got = rp(&hub, "app", vec![named("", "ConfigMap", "a")]);
    let expected = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "app", "labels": {"keep": "me"}, "annotations": {"keep": "me"}},
        "data": {"k": "v"}
    });
    assert_eq!(serde_json::to_value(&got[0]).unwrap(), expected);
}

#[test]
fn cleaning_drops_allocated_service_ips_but_keeps_headless() {
    let svc = |name: &str, ip: &str| {
        obj(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "app"},
            "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"port": 80}]}}))
    };
    let got = clean(&svc("a", "10.0.0.1"));
    assert_eq!(got.spec().unwrap(), &json!({"ports": [{"port": 80}]}));
    let headless = clean(&svc("b", "None"));
    assert_eq!(headless.spec().unwrap()["clusterIP"], "None");
}

#[test]
fn order_is_kubefleet_s_apply_order_then_version_namespace_name_and_duplicates_collapse() {
    let deploy =
        obj(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "b"}}));
    let widget =
        obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "a"}}));
    let hub = Hub(vec![cm("b", "z"), deploy, widget, cm("a", "y"), ns("b"), ns("a"), cluster_role("r")]);
    let got = crp(
        &hub,
        vec![
            sel("rbac.authorization.k8s.io", "ClusterRole"),
            sel("", "Namespace"),
            named("", "Namespace", "a"), // selects "a" a second time
        ],
    );
    assert_eq!(
        names(&got),
        [
            "Namespace/a",
            "Namespace/b",
            "ConfigMap/a/y",
            "ConfigMap/b/z",
            "ClusterRole/r",
            "Deployment/b/d",
            "Widget/a/w",
        ],
        "unknown kinds last"
    );
}

#[test]
fn a_selector_matching_nothing_selects_nothing() {
    let hub = Hub(vec![ns("app")]);
    assert!(crp(&hub, vec![named("", "Namespace", "missing")]).is_empty());
    assert!(crp(&hub, vec![]).is_empty());
}

#[test]
fn identifiers_split_api_version() {
    let deploy =
        obj(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "b"}}));
    let ids = identifiers(&[ns("b"), deploy]);
    assert_eq!(
        ids,
        [
            ResourceIdentifier {
                group: "".into(),
                version: "v1".into(),
                kind: "Namespace".into(),
                name: "b".into(),
                namespace: "".into()
            },
            ResourceIdentifier {
                group: "apps".into(),
                version: "v1".into(),
                kind: "Deployment".into(),
                name: "d".into(),
                namespace: "b".into()
            },
        ]
    );
}

/// KubeFleet places a user's own kinds in any group, even one under
/// kubernetes-fleet.io; only Fleet's own kinds are never placed.
#[test]
fn only_fleet_s_own_kinds_are_never_placed() {
    assert!(!is_fleet_kind("test.kubernetes-fleet.io", "TestResource"));
    assert!(is_fleet_kind("cluster.kubernetes-fleet.io", "MemberCluster"));
    assert!(is_fleet_kind("placement.kubernetes-fleet.io", "Work"));
    assert!(!is_fleet_kind("placement.kubernetes-fleet.io", "ResourceEnvelope"));
    assert!(is_fleet_kind("networking.fleet.azure.com", "ServiceImport"));
    assert!(!is_fleet_kind("networking.fleet.azure.com", "ServiceExport"));
}

fn scoped_namespace(name: &str) -> ResourceSelector {
    ResourceSelector {
        selection_scope: Some(fleet_api::placement::NAMESPACE_WITH_RESOURCE_SELECTORS.into()),
        ..named("", "Namespace", name)
    }
}

/// KubeFleet's NamespaceWithResourceSelectors: the namespace, and of its
/// contents only what the other selectors pick; those selectors' namespaced
/// objects come from that namespace only, their cluster-scoped ones as usual.
#[test]
fn namespace_with_resource_selectors_places_only_the_selected_contents() {
    let hub = Hub(vec![
        ns("web"),
        ns("db"),
        cm("web", "settings"),
        cm("web", "other"),
        cm("db", "settings"),
        cluster_role("admin"),
        obj(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "web"}})),
    ]);
    let got = crp(
        &hub,
        vec![
            scoped_namespace("web"),
            named("", "ConfigMap", "settings"),
            named("rbac.authorization.k8s.io", "ClusterRole", "admin"),
        ],
    );
    assert_eq!(names(&got), ["Namespace/web", "ConfigMap/web/settings", "ClusterRole/admin"]);
    let every = crp(&hub, vec![scoped_namespace("web"), sel("", "ConfigMap")]);
    assert_eq!(names(&every), ["Namespace/web", "ConfigMap/web/other", "ConfigMap/web/settings"]);
    assert_eq!(names(&crp(&hub, vec![scoped_namespace("web")])), ["Namespace/web"]);
}

#[test]
fn a_missing_namespace_with_resource_selectors_namespace_is_a_selector_problem() {
    let hub = Hub(vec![ns("web"), cm("web", "settings"), cm("db", "settings")]);
    let selectors = vec![scoped_namespace("db"), named("", "ConfigMap", "settings")];
    assert!(crp(&hub, selectors.clone()).is_empty(), "nothing is picked in a namespace the hub lacks");
    let problem = selector_problem(CLUSTER_RESOURCE_PLACEMENT, "web", &spec(selectors), &hub).unwrap_or_default();
    assert_eq!(
        problem,
        "invalid clusterResourcePlacement web: NamespaceWithResourceSelectors mode requires exactly one namespace, \
         but no namespaces were selected"
    );
    let fine = spec(vec![scoped_namespace("web"), named("", "ConfigMap", "settings")]);
    assert_eq!(selector_problem(CLUSTER_RESOURCE_PLACEMENT, "web", &fine, &hub), None);
    let plain = spec(vec![named("", "Namespace", "db")]);
    assert_eq!(selector_problem(CLUSTER_RESOURCE_PLACEMENT, "web", &plain, &hub), None);
}
