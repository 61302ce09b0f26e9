//! Apply strategies end to end on a real trio with real agents on embedded
//! members, objects changed behind Fleet's back with `fleet-agent
//! apply|patch|delete` while the agents run: ReportDiff (conditions and
//! diffs, nothing applied), drift under `whenToApply: Always` (overwritten;
//! what the write leaves reported) and `IfNotDrifted` (reported, kept), `whenToTakeOver`
//! `Never` / `IfNoDiff` / `Always`, and `allowCoOwnership`.

use fleet_api::Object;
use fleet_proto::fleet::{WatchEvent, WatchRequest};
use fleet_tests::fleet::{apply_yaml, entry, fleet_with, list, listed, member_object, Member, WAIT};
use fleet_tests::objects::{condition, get, kind};
use fleet_tests::{eventually, Hub};
use futures::StreamExt;
use serde_json::{json, Value};

/// The README's ReportDiff example: CRP `config-audit` of namespace `audit`
/// (ConfigMap `settings`, `mode: standard`), and someone else's copy.
const AUDIT: &str = include_str!("../../deploy/examples/apply-strategies/audit.yaml");
const MEMBER_COPY: &str = include_str!("../../deploy/examples/apply-strategies/member-copy.yaml");

const EAST: Member = Member { name: "east-1", labels: &[("region", "east")], nodes: 2, cpu: 4 };
const WEST: Member = Member { name: "west-1", labels: &[("region", "west")], nodes: 2, cpu: 4 };

/// Agents look at every Work this often (KubeFleet's default is 15s).
const DRIFT_CHECK: &[&str] = &["--drift-check-interval", "2s"];

/// A Namespace and ConfigMaps `(name, value)` in it, each with `data: {k: value}`.
fn objects(namespace: &str, configmaps: &[(&str, &str)]) -> String {
    let mut yaml = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n");
    for (name, value) in configmaps {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  k: {value}\n"
        ));
    }
    yaml
}

/// A PickAll CRP of namespace `namespace` with `applyStrategy` (a YAML flow map).
fn crp_yaml(name: &str, namespace: &str, apply_strategy: &str) -> String {
    format!(
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata:\n  name: {name}\nspec:\n  resourceSelectors:\n    - {{group: \"\", version: v1, kind: Namespace, name: {namespace}}}\n  policy: {{placementType: PickAll}}\n  strategy:\n    applyStrategy: {apply_strategy}\n"
    )
}

/// Runs an out-of-band edit on `cluster`'s embedded target; panics with its error.
fn edit(hub: &Hub, cluster: &str, subcommand: &str, args: &[&str], stdin: Option<&str>) -> String {
    let out = hub.edit_member(cluster, subcommand, args, stdin);
    assert!(out.status.success(), "fleet-agent {subcommand} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `data.k` of a ConfigMap on a member.
fn member_value(hub: &Hub, cluster: &str, namespace: &str, name: &str) -> Option<String> {
    member_object(hub, cluster, "configmap", namespace, name)?["data"]["k"].as_str().map(str::to_string)
}

fn owner_annotation(object: &Value) -> Option<&str> {
    object["metadata"]["annotations"]["fleet.kubernetes-fleet.io/owner-work"].as_str()
}

async fn placement(hub: &Hub, name: &str) -> Result<Object, String> {
    let mut admin = hub.client(hub.running()[0]).await;
    get(&mut admin, "crp", "", name).await.map_err(|e| e.to_string())
}

/// (type, status, reason) of an entry's conditions, in order.
fn conditions_of(entry: &Value) -> Vec<(String, String, String)> {
    let text = |c: &Value, k: &str| c[k].as_str().unwrap_or_default().to_string();
    entry["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| (text(c, "type"), text(c, "status"), text(c, "reason")))
        .collect()
}

fn c(type_: &str, status: &str, reason: &str) -> (String, String, String) {
    (type_.into(), status.into(), reason.into())
}

/// Waits until the placement's condition `suffix` has `status` at its generation.
async fn wait_condition(hub: &Hub, name: &str, suffix: &str, status: &str) -> Object {
    let type_ = format!("ClusterResourcePlacement{suffix}");
    eventually(&format!("{name}: {type_}={status}"), WAIT * 2, || async {
        let crp = placement(hub, name).await?;
        match condition(&crp, &type_) {
            Some(c) if c.0 == status && c.2 == crp.metadata.generation => Ok(crp),
            other => Err(format!("{other:?}: {:?}", crp.status())),
        }
    })
    .await
}

/// A watch of every ClusterResourcePlacement, from their current state on.
async fn watch_placements(hub: &Hub) -> tonic::Streaming<WatchEvent> {
    let mut admin = hub.client(hub.running()[0]).await;
    let request = WatchRequest {
        kind: kind("clusterresourceplacements"),
        namespace: String::new(),
        all_namespaces: true,
        label_selector: String::new(),
        resource_version: 0,
        min_resource_version: 0,
    };
    admin.watch(request).await.expect("watch").into_inner()
}

/// The first version of placement `name` the watch shows satisfying `want`.
async fn seen(
    stream: &mut tonic::Streaming<WatchEvent>,
    name: &str,
    what: &str,
    want: impl Fn(&Object) -> bool,
) -> Object {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let event = match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(e))) => e,
            other => panic!("watching for {name}: {what}: {other:?}"),
        };
        let Ok(crp) = Object::from_json(&event.object) else { continue };
        if crp.metadata.name == name && want(&crp) {
            return crp;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_diff_applies_nothing_and_reports_diffs_on_an_empty_and_a_changed_member() {
    let hub = fleet_with(&[&EAST, &WEST], DRIFT_CHECK).await;
    // west-1 holds a changed copy, created there by someone else.
    let created = edit(&hub, "west-1", "apply", &["-f", "-"], Some(MEMBER_COPY));
    assert_eq!(created, "namespace/audit created\nconfigmap/settings created\n");
    apply_yaml(&hub, AUDIT);

    let crp = wait_condition(&hub, "config-audit", "DiffReported", "True").await;
    let placement_conditions: Vec<String> = crp
        .status()
        .and_then(|s| s["conditions"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|c| {
            format!(
                "{}={} {}: {}",
                c["type"].as_str().unwrap_or(""),
                c["status"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        placement_conditions.last().map(String::as_str),
        Some("ClusterResourcePlacementDiffReported=True DiffReportingCompleted: Diff reporting in 2 cluster(s) has been completed"),
        "{placement_conditions:?}"
    );
    assert!(
        !placement_conditions.iter().any(|c| c.contains("Applied") || c.contains("Available")),
        "{placement_conditions:?}"
    );
    for cluster in ["east-1", "west-1"] {
        let e = entry(&crp, cluster);
        assert_eq!(
            conditions_of(&e)[1..],
            [
                c("RolloutStarted", "True", "RolloutStarted"),
                c("Overridden", "True", "NoOverrideSpecified"),
                c("WorkSynchronized", "True", "AllWorkSynced"),
                c("DiffReported", "True", "AllWorkHaveDiffReported"),
            ],
            "{cluster}: {e}"
        );
    }
    // The empty member lacks both objects; the changed one differs in one field.
    let east = entry(&crp, "east-1");
    for (kind, name) in [("Namespace", "audit"), ("ConfigMap", "settings")] {
        let diffed = listed(&east, "diffedPlacements", kind, name).unwrap_or_else(|| panic!("{kind} {name}: {east}"));
        assert_eq!(diffed["observedDiffs"], json!([{"path": "/", "valueInHub": "(the whole object)"}]), "{diffed}");
        assert!(diffed["firstDiffedObservedTime"].is_string() && diffed["observationTime"].is_string(), "{diffed}");
    }
    let west = entry(&crp, "west-1");
    let settings = listed(&west, "diffedPlacements", "ConfigMap", "settings").unwrap_or_else(|| panic!("{west}"));
    assert_eq!(
        settings["observedDiffs"],
        json!([{"path": "/data/mode", "valueInHub": "standard", "valueInMember": "debug"}])
    );
    assert!(settings["firstDiffedObservedTime"].is_string(), "{settings}");
    assert!(listed(&west, "diffedPlacements", "Namespace", "audit").is_none(), "the same namespace: {west}");

    // The Works say DiffReported, not Applied.
    let works = list(&hub, "work", "kubernetes-fleet.io/parent-CRP=config-audit").await.expect("works");
    assert_eq!(works.len(), 2);
    for w in &works {
        assert_eq!(
            condition(w, "DiffReported").map(|c| (c.0, c.1)),
            Some(("True".into(), "AllManifestsDiffReported".into()))
        );
        assert!(condition(w, "Applied").is_none() && condition(w, "Available").is_none(), "{:?}", w.status());
    }

    // Nothing was applied.
    assert!(member_object(&hub, "east-1", "namespace", "", "audit").is_none());
    let member_copy = member_object(&hub, "west-1", "configmap", "audit", "settings").expect("kept");
    assert_eq!(member_copy["data"]["mode"], "debug");
    assert_eq!(owner_annotation(&member_copy), None, "not taken over");

    // fleetctl speaks of diffs.
    let out = hub.fleetctl(&["rollout", "status", "crp", "config-audit"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("east-1: DiffReported") && text.contains("2/2 clusters diff reported"), "{text}");
    assert!(!text.contains("vailable"), "{text}");
    let out = hub.fleetctl(&["get", "crp", "config-audit", "-o", "wide"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let headers: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    let row: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    let at =
        |h: &str| headers.iter().position(|x| *x == h).and_then(|i| row.get(i - (headers.len() - row.len()))).copied();
    assert_eq!(
        (at("APPLIED-CLUSTERS"), at("AVAILABLE-CLUSTERS"), at("DIFF-REPORTED-CLUSTERS")),
        (Some("-"), Some("-"), Some("2")),
        "{text}"
    );
    eventually("describe shows the DiffReported conditions and event", WAIT, || async {
        let out = hub.fleetctl(&["describe", "crp", "config-audit"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("ClusterResourcePlacementDiffReported")
            && text.contains("DiffReportingCompleted")
            && text.contains("PlacementDiffReported")
        {
            Ok(())
        } else {
            Err(text)
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_overwritten_under_always_and_reported_and_kept_under_if_not_drifted() {
    let hub = fleet_with(&[&EAST], DRIFT_CHECK).await;
    apply_yaml(&hub, &objects("always", &[("cfg", "hub")]));
    apply_yaml(&hub, &objects("kept", &[("cfg", "hub")]));
    apply_yaml(&hub, &crp_yaml("always", "always", "{whenToApply: Always, comparisonOption: FullComparison}"));
    apply_yaml(&hub, &crp_yaml("kept", "kept", "{whenToApply: IfNotDrifted}"));
    wait_condition(&hub, "always", "Available", "True").await;
    wait_condition(&hub, "kept", "Available", "True").await;

    // Someone changes both on the member (kubectl patch) while the agent runs.
    let mut watch = watch_placements(&hub).await;
    // On "always" the member also adds a label Fleet does not set.
    for (namespace, patch) in [
        ("always", r#"{"metadata":{"labels":{"team":"x"}},"data":{"k":"member"}}"#),
        ("kept", r#"{"data":{"k":"member"}}"#),
    ] {
        let out = edit(&hub, "east-1", "patch", &["configmap", "cfg", "-n", namespace, "-p", patch], None);
        assert_eq!(out, "configmap/cfg patched\n");
    }
    let drift = json!([{"path": "/data/k", "valueInHub": "hub", "valueInMember": "member"}]);

    // Always: the next drift check overwrites the value; what the write
    // leaves (the added label, under full comparison) is reported.
    let drifted = |crp: &Object| listed(&entry(crp, "east-1"), "driftedPlacements", "ConfigMap", "cfg").cloned();
    let reported = seen(&mut watch, "always", "the added label reported", |crp| drifted(crp).is_some()).await;
    let report = drifted(&reported).unwrap_or_default();
    assert_eq!(report["observedDrifts"], json!([{"path": "/metadata/labels/team", "valueInMember": "x"}]), "{report}");
    assert!(report["observationTime"].is_string() && report["firstDriftedObservedTime"].is_string(), "{report}");
    assert_eq!(member_value(&hub, "east-1", "always", "cfg").as_deref(), Some("hub"), "overwritten");
    let applied = conditions_of(&entry(&reported, "east-1"));
    assert!(applied.contains(&c("Applied", "True", "AllWorkHaveBeenApplied")), "{applied:?}");
    // ... and the report goes once the label is removed on the member.
    edit(
        &hub,
        "east-1",
        "patch",
        &["cm", "cfg", "-n", "always", "-p", r#"{"metadata":{"labels":{"team":null}}}"#],
        None,
    );
    let cleared = seen(&mut watch, "always", "the drift report cleared", |crp| drifted(crp).is_none()).await;
    assert!(entry(&cleared, "east-1").get("driftedPlacements").is_none());

    // IfNotDrifted: reported, the apply stops there, the member's value stays.
    let kept = eventually("kept reports the drift", WAIT, || async {
        let crp = placement(&hub, "kept").await?;
        let e = entry(&crp, "east-1");
        match (listed(&e, "driftedPlacements", "ConfigMap", "cfg"), listed(&e, "failedPlacements", "ConfigMap", "cfg"))
        {
            (Some(d), Some(f)) => Ok((d.clone(), f.clone())),
            _ => Err(e.to_string()),
        }
    })
    .await;
    assert_eq!(kept.0["observedDrifts"], drift);
    assert_eq!(kept.1["condition"]["reason"], "FoundDrifts", "{}", kept.1);
    let crp = placement(&hub, "kept").await.expect("kept");
    assert!(conditions_of(&entry(&crp, "east-1")).contains(&c("Applied", "False", "NotAllWorkHaveBeenApplied")));
    assert_eq!(member_value(&hub, "east-1", "kept", "cfg").as_deref(), Some("member"), "not overwritten");

    // Reverted on the member: the report goes, the placement is applied again.
    edit(&hub, "east-1", "patch", &["cm", "cfg", "-n", "kept", "-p", r#"{"data":{"k":"hub"}}"#], None);
    let crp = wait_condition(&hub, "kept", "Available", "True").await;
    assert!(entry(&crp, "east-1").get("driftedPlacements").is_none());

    // Deleted on the member: created again at the next check.
    assert_eq!(edit(&hub, "east-1", "delete", &["configmap", "cfg", "-n", "always"], None), "configmap/cfg deleted\n");
    eventually("cfg placed again", WAIT, || async {
        member_value(&hub, "east-1", "always", "cfg").filter(|v| v == "hub").ok_or_else(|| "not yet".to_string())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_to_take_over_decides_about_objects_created_out_of_band() {
    let hub = fleet_with(&[&EAST], DRIFT_CHECK).await;
    // Created on the member by someone else: a different `cfg` in each
    // namespace, and in `ifnodiff` also an identical `same`.
    let member_side = [
        objects("never", &[("cfg", "member")]),
        objects("ifnodiff", &[("cfg", "member"), ("same", "hub")]),
        objects("always", &[("cfg", "member")]),
    ]
    .join("---\n");
    let out = edit(&hub, "east-1", "apply", &["-f", "-"], Some(&member_side));
    assert_eq!(out.lines().filter(|l| l.ends_with(" created")).count(), 7, "{out}");
    apply_yaml(&hub, &objects("never", &[("cfg", "hub")]));
    apply_yaml(&hub, &objects("ifnodiff", &[("cfg", "hub"), ("same", "hub")]));
    apply_yaml(&hub, &objects("always", &[("cfg", "hub")]));
    apply_yaml(&hub, &crp_yaml("never", "never", "{whenToTakeOver: Never}"));
    apply_yaml(&hub, &crp_yaml("ifnodiff", "ifnodiff", "{whenToTakeOver: IfNoDiff}"));
    apply_yaml(&hub, &crp_yaml("always", "always", "{whenToTakeOver: Always}"));

    // Never: nothing taken over, every object NotTakenOver.
    let crp = wait_condition(&hub, "never", "Applied", "False").await;
    let e = entry(&crp, "east-1");
    for (kind, name) in [("Namespace", "never"), ("ConfigMap", "cfg")] {
        let failed = listed(&e, "failedPlacements", kind, name).unwrap_or_else(|| panic!("{kind} {name}: {e}"));
        assert_eq!(failed["condition"]["reason"], "NotTakenOver", "{failed}");
    }
    let cfg = member_object(&hub, "east-1", "configmap", "never", "cfg").expect("cfg");
    assert_eq!((cfg["data"]["k"].as_str(), owner_annotation(&cfg)), (Some("member"), None));

    // IfNoDiff: the identical objects are taken over, the different one is not, its diff reported.
    let crp = wait_condition(&hub, "ifnodiff", "Applied", "False").await;
    let e = entry(&crp, "east-1");
    let failed = listed(&e, "failedPlacements", "ConfigMap", "cfg").unwrap_or_else(|| panic!("{e}"));
    assert_eq!(failed["condition"]["reason"], "FailedToTakeOver", "{failed}");
    let diffed = listed(&e, "diffedPlacements", "ConfigMap", "cfg").unwrap_or_else(|| panic!("{e}"));
    assert_eq!(diffed["observedDiffs"], json!([{"path": "/data/k", "valueInHub": "hub", "valueInMember": "member"}]));
    assert!(
        listed(&e, "failedPlacements", "ConfigMap", "same").is_none()
            && listed(&e, "failedPlacements", "Namespace", "ifnodiff").is_none(),
        "{e}"
    );
    let same = member_object(&hub, "east-1", "configmap", "ifnodiff", "same").expect("same");
    assert!(owner_annotation(&same).is_some(), "taken over: {same}");
    let cfg = member_object(&hub, "east-1", "configmap", "ifnodiff", "cfg").expect("cfg");
    assert_eq!((cfg["data"]["k"].as_str(), owner_annotation(&cfg)), (Some("member"), None));

    // Always: taken over and overwritten.
    wait_condition(&hub, "always", "Available", "True").await;
    let cfg = member_object(&hub, "east-1", "configmap", "always", "cfg").expect("cfg");
    assert_eq!(cfg["data"]["k"], "hub");
    assert_eq!(owner_annotation(&cfg), Some("fleet-member-east-1/always-work"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_with_another_owner_is_applied_only_with_allow_co_ownership() {
    let hub = fleet_with(&[&EAST], DRIFT_CHECK).await;
    let owned = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: owned\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: owned\n  ownerReferences:\n    - {apiVersion: apps/v1, kind: Deployment, name: other, uid: 2f1c}\ndata:\n  k: member\n";
    edit(&hub, "east-1", "apply", &["-f", "-"], Some(owned));
    apply_yaml(&hub, &objects("owned", &[("cfg", "hub")]));
    apply_yaml(&hub, &crp_yaml("owned", "owned", "{allowCoOwnership: false}"));

    let crp = wait_condition(&hub, "owned", "Applied", "False").await;
    let e = entry(&crp, "east-1");
    let failed = listed(&e, "failedPlacements", "ConfigMap", "cfg").unwrap_or_else(|| panic!("{e}"));
    assert_eq!(failed["condition"]["reason"], "FailedToTakeOver", "{failed}");
    assert!(listed(&e, "failedPlacements", "Namespace", "owned").is_none(), "the namespace has no other owner: {e}");
    let cfg = member_object(&hub, "east-1", "configmap", "owned", "cfg").expect("cfg");
    assert_eq!((cfg["data"]["k"].as_str(), owner_annotation(&cfg)), (Some("member"), None));

    // Allowed: applied, the other owner kept.
    apply_yaml(&hub, &crp_yaml("owned", "owned", "{allowCoOwnership: true}"));
    wait_condition(&hub, "owned", "Available", "True").await;
    let cfg = member_object(&hub, "east-1", "configmap", "owned", "cfg").expect("cfg");
    assert_eq!(cfg["data"]["k"], "hub");
    assert!(owner_annotation(&cfg).is_some());
    assert_eq!(cfg["metadata"]["ownerReferences"][0]["name"], "other");
}
