//! What each watch event wakes, checked on the feed alone (no store, no
//! Raft): every kind of change, and the runs index under any sequence of
//! run events.

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn feed() -> Feed {
    Feed {
        queue: Arc::new(WorkQueue::new()),
        placements: BTreeMap::new(),
        runs: BTreeMap::new(),
        runs_by_placement: BTreeMap::new(),
        clusters: Arc::new(ClusterCache::default()),
        clusters_listed_at: 0,
        overrides: Arc::new(OverrideCache::default()),
        overrides_listed_at: BTreeMap::new(),
        ocm: OcmFeed::default(),
    }
}

fn run(name: u8, placement: u8, finished: bool) -> Object {
    let conditions = if finished {
        json!([{"type": "Succeeded", "status": "True", "reason": "r", "message": "", "lastTransitionTime": "t"}])
    } else {
        json!([])
    };
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": CLUSTER_STAGED_UPDATE_RUN,
        "metadata": {"name": format!("run-{name}")},
        "spec": {"placementName": format!("crp-{placement}"), "resourceSnapshotIndex": "0", "stagedRolloutStrategyName": "s"},
        "status": {"conditions": conditions}
    }))
    .unwrap()
}

fn event(event_type: EventType, object: Object, resource_version: u64) -> WatchEvent {
    WatchEvent {
        event_type,
        key: ObjectKey::of(&object),
        object: Arc::new(object),
        resource_version,
        size: 0,
        previous: None,
    }
}

proptest! {
    /// After any sequence of run events, the index holds exactly the
    /// unfinished runs of each placement, as a scan of every run finds.
    #[test]
    fn the_runs_index_agrees_with_a_scan(steps in prop::collection::vec((any::<bool>(), 0u8..5, 0u8..3, any::<bool>()), 0..40)) {
        let mut feed = feed();
        for (i, (delete, name, placement, finished)) in steps.into_iter().enumerate() {
            let object = run(name, placement, finished);
            let kind = if delete { EventType::Deleted } else { EventType::Modified };
            feed.on_event(&event(kind, object, i as u64 + 1));
        }
        let mut scanned: BTreeMap<ObjectKey, BTreeSet<ObjectKey>> = BTreeMap::new();
        for (key, entry) in &feed.runs {
            if !entry.finished {
                scanned.entry(entry.placement.clone()).or_default().insert(key.clone());
            }
        }
        prop_assert_eq!(&feed.runs_by_placement, &scanned);
    }
}

fn object(value: serde_json::Value) -> Object {
    serde_json::from_value(value).unwrap()
}

const PLACEMENT_API: &str = "placement.kubernetes-fleet.io/v1beta1";

/// A ClusterResourcePlacement (or, with a namespace, a ResourcePlacement)
/// selecting `kind` (of the core group); `reads_properties` gives it a
/// property selector.
fn placement(name: &str, namespace: Option<&str>, kind: &str, reads_properties: bool) -> Object {
    let mut spec = json!({"resourceSelectors": [{"group": "", "version": "v1", "kind": kind, "name": "x"}]});
    if reads_properties {
        spec["policy"] = json!({"placementType": "PickAll", "affinity": {"clusterAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                {"propertySelector": {"matchExpressions": [{"name": "cost", "operator": "Lt", "values": ["5"]}]}}
            ]}
        }}});
    }
    let kind = if namespace.is_some() { RESOURCE_PLACEMENT } else { CLUSTER_RESOURCE_PLACEMENT };
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    object(json!({"apiVersion": PLACEMENT_API, "kind": kind, "metadata": metadata, "spec": spec}))
}

fn member(name: &str, labels: serde_json::Value, cost: &str) -> Object {
    object(json!({
        "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
        "metadata": {"name": name, "labels": labels},
        "spec": {"identity": {"name": "a", "kind": "ServiceAccount", "namespace": "fleet-system"}},
        "status": {"properties": {"cost": {"value": cost}}}
    }))
}

fn key_of(o: &Object) -> ObjectKey {
    ObjectKey::of(o)
}

fn keys(objects: &[&Object]) -> BTreeSet<ObjectKey> {
    objects.iter().map(|o| key_of(o)).collect()
}

/// A feed that knows `placements` (their own wake-ups already taken).
fn feed_with(placements: &[&Object]) -> Feed {
    let mut feed = feed();
    for (i, p) in placements.iter().enumerate() {
        feed.on_event(&event(EventType::Added, (*p).clone(), i as u64 + 1));
    }
    feed.queue.take_all();
    feed
}

#[test]
fn a_placement_change_wakes_it_and_the_runs_rolling_it_out() {
    let crp = placement("crp-1", None, "ConfigMap", false);
    let mut feed = feed_with(&[&crp]);
    feed.on_event(&event(EventType::Added, run(1, 1, false), 10));
    feed.on_event(&event(EventType::Added, run(2, 1, true), 11));
    feed.queue.take_all();
    feed.on_event(&event(EventType::Modified, crp.clone(), 12));
    assert_eq!(feed.queue.take_all(), keys(&[&crp, &run(1, 1, false)]), "the finished run stays asleep");

    // A deleted placement is forgotten (its cleanup ran while it was being
    // deleted); its unfinished runs wake to notice.
    feed.on_event(&event(EventType::Deleted, crp.clone(), 13));
    assert_eq!(feed.queue.take_all(), keys(&[&run(1, 1, false)]));
    let config_map =
        object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "app"}}));
    feed.on_event(&event(EventType::Added, config_map, 14));
    assert!(feed.queue.take_all().is_empty());
}

#[test]
fn snapshots_bindings_and_works_wake_their_placement() {
    let crp = placement("web", None, "ConfigMap", false);
    let rp = placement("web", Some("app"), "ConfigMap", false);
    let mut feed = feed_with(&[&crp, &rp]);
    let child = |kind: &str, namespace: Option<&str>, labels: serde_json::Value| {
        let mut metadata = json!({"name": "c", "labels": labels});
        if let Some(ns) = namespace {
            metadata["namespace"] = json!(ns);
        }
        object(json!({"apiVersion": PLACEMENT_API, "kind": kind, "metadata": metadata}))
    };
    let parent = json!({PARENT_PLACEMENT_LABEL: "web"});
    feed.on_event(&event(EventType::Added, child(binding::CLUSTER_RESOURCE_BINDING, None, parent.clone()), 10));
    assert_eq!(feed.queue.take_all(), keys(&[&crp]));
    feed.on_event(&event(EventType::Added, child(snapshot::RESOURCE_SNAPSHOT, Some("app"), parent.clone()), 11));
    assert_eq!(feed.queue.take_all(), keys(&[&rp]));
    // Works live in the member's namespace; an RP's name its own in a label.
    feed.on_event(&event(EventType::Modified, child("Work", Some("fleet-member-east"), parent.clone()), 12));
    assert_eq!(feed.queue.take_all(), keys(&[&crp]));
    let rp_work = json!({PARENT_PLACEMENT_LABEL: "web", fleet_placement::works::PARENT_NAMESPACE_LABEL: "app"});
    feed.on_event(&event(EventType::Modified, child("Work", Some("fleet-member-east"), rp_work), 13));
    assert_eq!(feed.queue.take_all(), keys(&[&rp]));
    // Unlabelled, or of a placement the feed does not know: nothing.
    feed.on_event(&event(EventType::Added, child(binding::CLUSTER_RESOURCE_BINDING, None, json!({})), 14));
    let stranger = json!({PARENT_PLACEMENT_LABEL: "gone"});
    feed.on_event(&event(EventType::Added, child(binding::CLUSTER_RESOURCE_BINDING, None, stranger), 15));
    assert!(feed.queue.take_all().is_empty());
}

#[test]
fn a_resource_wakes_only_the_placements_that_may_select_it() {
    let config_maps = placement("config-maps", None, "ConfigMap", false);
    let namespaces = placement("namespaces", None, "Namespace", false);
    let in_app = placement("in-app", Some("app"), "ConfigMap", false);
    let mut feed = feed_with(&[&config_maps, &namespaces, &in_app]);
    let resource = |kind: &str, namespace: &str| {
        object(json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": namespace}}))
    };
    feed.on_event(&event(EventType::Modified, resource("ConfigMap", "app"), 10));
    assert_eq!(feed.queue.take_all(), keys(&[&config_maps, &namespaces, &in_app]));
    feed.on_event(&event(EventType::Modified, resource("ConfigMap", "other"), 11));
    assert_eq!(feed.queue.take_all(), keys(&[&config_maps, &namespaces]), "an RP sees its namespace only");
    feed.on_event(&event(EventType::Modified, resource("Secret", "app"), 12));
    assert_eq!(feed.queue.take_all(), keys(&[&namespaces]), "a namespace brings all its contents");
    // A CRD may change the scope of what any envelope wraps: every placement.
    let crd = object(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                            "metadata": {"name": "widgets.example.com"}}));
    feed.on_event(&event(EventType::Added, crd, 13));
    assert_eq!(feed.queue.take_all(), keys(&[&config_maps, &namespaces, &in_app]));
}

#[test]
fn cluster_changes_wake_every_placement_or_only_those_reading_properties() {
    let plain = placement("plain", None, "ConfigMap", false);
    let by_cost = placement("by-cost", None, "ConfigMap", true);
    let mut feed = feed_with(&[&plain, &by_cost]);
    feed.on_event(&event(EventType::Added, run(1, 1, false), 5));
    let profile = super::super::profiles::profile_key("east");
    let unfinished_run = key_of(&run(1, 1, false));

    let sets_namespaces = crate::controllers::ocm::clusterset::managed_namespaces_key();

    // A new cluster: every placement, every unfinished run, and the OCM
    // cluster sets' managed namespaces.
    feed.on_event(&event(EventType::Added, member("east", json!({"env": "prod"}), "3"), 10));
    assert_eq!(
        feed.queue.take_all(),
        [key_of(&plain), key_of(&by_cost), unfinished_run.clone(), profile.clone(), sets_namespaces.clone()]
            .into_iter()
            .collect()
    );
    // A property only: the placements whose policy reads properties.
    // (OCM reads every cluster change: its sets' managed namespaces wake too.)
    feed.on_event(&event(EventType::Modified, member("east", json!({"env": "prod"}), "4"), 11));
    assert_eq!(
        feed.queue.take_all(),
        [key_of(&by_cost), profile.clone(), sets_namespaces.clone()].into_iter().collect()
    );
    // Nothing the scheduler reads: the profile only.
    feed.on_event(&event(EventType::Modified, member("east", json!({"env": "prod"}), "4"), 12));
    assert_eq!(feed.queue.take_all(), [profile.clone()].into_iter().collect());
    // Labels: everyone again.
    feed.on_event(&event(EventType::Modified, member("east", json!({"env": "dev"}), "4"), 13));
    assert_eq!(feed.queue.take_all().len(), 5);
    // An event the last listing already held changes nothing but the profile.
    feed.clusters_listed_at = 20;
    feed.on_event(&event(EventType::Modified, member("east", json!({"env": "qa"}), "4"), 20));
    assert_eq!(feed.queue.take_all(), [profile.clone()].into_iter().collect());
    feed.on_event(&event(EventType::Deleted, member("east", json!({"env": "qa"}), "4"), 21));
    assert_eq!(feed.queue.take_all().len(), 5);
}

#[test]
fn an_override_snapshot_wakes_the_placement_it_names_or_every_one() {
    let a = placement("a", None, "ConfigMap", false);
    let b = placement("b", None, "ConfigMap", false);
    let mut feed = feed_with(&[&a, &b]);
    let snapshot = |name: &str, placement: Option<&str>| {
        let mut spec = json!({"policy": {"overrideRules": []}, "clusterResourceSelectors": []});
        if let Some(p) = placement {
            spec["placement"] = json!({"name": p});
        }
        object(json!({"apiVersion": PLACEMENT_API, "kind": overrides_api::CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT,
                      "metadata": {"name": name}, "spec": {"overrideSpec": spec, "overrideHash": "h"}}))
    };
    feed.on_event(&event(EventType::Added, snapshot("for-a-0", Some("a")), 10));
    assert_eq!(feed.queue.take_all(), keys(&[&a]));
    feed.on_event(&event(EventType::Added, snapshot("for-all-0", None), 11));
    assert_eq!(feed.queue.take_all(), keys(&[&a, &b]));
}

#[test]
fn approvals_evictions_overrides_mirrors_and_profiles_queue_their_own_keys() {
    let crp = placement("web", None, "ConfigMap", false);
    let mut feed = feed_with(&[&crp]);
    let approval = object(json!({
        "apiVersion": PLACEMENT_API, "kind": staged_api::CLUSTER_APPROVAL_REQUEST, "metadata": {"name": "r"},
        "spec": {"parentStageRollout": "run-1", "targetStage": "canary"}
    }));
    feed.on_event(&event(EventType::Added, approval, 10));
    assert_eq!(feed.queue.take_all(), keys(&[&run(1, 1, false)]));

    let eviction = object(json!({"apiVersion": PLACEMENT_API, "kind": "ClusterResourcePlacementEviction",
                                 "metadata": {"name": "e"}}));
    feed.on_event(&event(EventType::Added, eviction.clone(), 11));
    assert_eq!(feed.queue.take_all(), [evictions_key()].into_iter().collect());
    feed.on_event(&event(EventType::Deleted, eviction, 12));
    assert!(feed.queue.take_all().is_empty());

    let rule = object(json!({"apiVersion": PLACEMENT_API, "kind": overrides_api::CLUSTER_RESOURCE_OVERRIDE,
                             "metadata": {"name": "o"}}));
    feed.on_event(&event(EventType::Modified, rule.clone(), 13));
    assert_eq!(feed.queue.take_all(), keys(&[&rule]));
    feed.on_event(&event(EventType::Deleted, rule, 14));
    assert!(feed.queue.take_all().is_empty());

    // The namespace-accessible mirror of a placement, changed by someone else.
    let mirror = object(json!({"apiVersion": PLACEMENT_API, "kind": CLUSTER_RESOURCE_PLACEMENT_STATUS,
                               "metadata": {"name": "web", "namespace": "app"}}));
    feed.on_event(&event(EventType::Modified, mirror, 15));
    assert_eq!(feed.queue.take_all(), keys(&[&crp]));

    let profile = super::super::profiles::profile_key("east");
    let profile_object = object(json!({
        "apiVersion": format!("{}/v1alpha1", profile.group), "kind": profile.kind,
        "metadata": {"name": "east", "namespace": profile.namespace}
    }));
    feed.on_event(&event(EventType::Deleted, profile_object, 16));
    assert_eq!(feed.queue.take_all(), [profile].into_iter().collect());
}
