//! A placed Secret's values never reach the hub in clear: on a real trio
//! with an embedded member, a Secret drifted on the member under
//! `whenToApply: IfNotDrifted` and one compared by ReportDiff with a
//! differing member copy are reported with KubeFleet's redaction text, and
//! neither the hub's nor the member's values show up in the placements'
//! status, the Works' status, the events, the hub nodes' logs or the
//! agent's log (everything at debug level). The Secrets themselves are on
//! the hub (the user applied them there): they are not looked at.

use fleet_api::Object;
use fleet_tests::fleet::{apply_yaml, fleet_with, list, member_object, Member, WAIT};
use fleet_tests::objects::get;
use fleet_tests::{eventually, Hub};
use serde_json::{json, Value};

const EAST: Member = Member { name: "east-1", labels: &[("region", "east")], nodes: 2, cpu: 4 };

/// Agents look at every Work this often.
const DRIFT_CHECK: &[&str] = &["--drift-check-interval", "1s"];

const REDACTED: &str = "(redacted for security reasons)";

/// Distinctive values (as set, and base64 in `data`) that must never be seen.
/// `H*`: the hub's; `M*`: the member's; `*D`: drift, `*R`: ReportDiff.
const HD: (&str, &str) = ("hub-drift-7Qx2", "aHViLWRyaWZ0LTdReDI=");
const MD: (&str, &str) = ("member-drift-Kp9w", "bWVtYmVyLWRyaWZ0LUtwOXc=");
const HR: (&str, &str) = ("hub-report-Zt4v", "aHViLXJlcG9ydC1adDR2");
const MR: (&str, &str) = ("member-report-Ls8n", "bWVtYmVyLXJlcG9ydC1Mczhu");
/// `stringData` values (plain).
const HS: &str = "hub-string-Ve3c";
const MS: &str = "member-string-Wa6j";

fn leaks() -> Vec<&'static str> {
    [HD, MD, HR, MR].iter().flat_map(|(plain, b64)| [*plain, *b64]).chain([HS, MS]).collect()
}

/// Namespace `namespace` with Secret `creds` (`data.password` = `password`,
/// `stringData.token` = `token` if given) and a PickAll CRP of it with `apply_strategy`.
fn placed(namespace: &str, password: &str, token: Option<&str>, apply_strategy: &str) -> String {
    let string_data = token.map(|t| format!("stringData:\n  token: {t}\n")).unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: {namespace}\ndata:\n  password: {password}\n{string_data}---\n\
         apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata:\n  name: {namespace}\nspec:\n  resourceSelectors:\n    - {{group: \"\", version: v1, kind: Namespace, name: {namespace}}}\n  policy: {{placementType: PickAll}}\n  strategy:\n    applyStrategy: {apply_strategy}\n"
    )
}

fn edit(hub: &Hub, subcommand: &str, args: &[&str], stdin: Option<&str>) -> String {
    let out = hub.edit_member(EAST.name, subcommand, args, stdin);
    assert!(out.status.success(), "fleet-agent {subcommand} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn placement(hub: &Hub, name: &str) -> Result<Object, String> {
    let mut admin = hub.client(hub.running()[0]).await;
    get(&mut admin, "crp", "", name).await.map_err(|e| e.to_string())
}

/// The Secret's entry in the member's placement status list `field`.
fn secret_entry(crp: &Object, field: &str) -> Option<Value> {
    let statuses = crp.status()?.get("placementStatuses")?.as_array()?.clone();
    let e = statuses.into_iter().find(|e| e["clusterName"] == EAST.name)?;
    e[field].as_array()?.iter().find(|p| p["kind"] == "Secret" && p["name"] == "creds").cloned()
}

/// Waits for the Secret's `field` entry (`driftedPlacements`, `diffedPlacements`) of placement `name`.
async fn reported(hub: &Hub, name: &str, field: &str) -> Value {
    eventually(&format!("{name}: the Secret in {field}"), WAIT * 2, || async {
        let crp = placement(hub, name).await?;
        secret_entry(&crp, field).ok_or_else(|| format!("{:?}", crp.status()))
    })
    .await
}

/// Asserts that no value of [`leaks`] is in `text` (`what`, for the message).
fn nothing_leaked(what: &str, text: &str) {
    for leak in leaks() {
        assert!(!text.contains(leak), "{what} holds {leak:?}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_values_are_redacted_in_reports_and_absent_from_status_and_logs() {
    // Every process at debug level, the agent's and the hub nodes' logs
    // included (the harness hands this to them as RUST_LOG). This test is
    // alone in its binary, so the process environment is its own.
    std::env::set_var("FLEET_TEST_LOG", "debug");
    let hub = fleet_with(&[&EAST], DRIFT_CHECK).await;

    // ReportDiff: the member holds its own copy first.
    let member_copy = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: vault-report\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: vault-report\ndata:\n  password: {}\nstringData:\n  token: {MS}\n",
        MR.1
    );
    assert_eq!(
        edit(&hub, "apply", &["-f", "-"], Some(&member_copy)),
        "namespace/vault-report created\nsecret/creds created\n"
    );
    apply_yaml(&hub, &placed("vault-report", HR.1, Some(HS), "{type: ReportDiff}"));

    // IfNotDrifted: placed, then changed on the member.
    apply_yaml(&hub, &placed("vault-drift", HD.1, None, "{whenToApply: IfNotDrifted}"));
    eventually("the Secret placed on the member", WAIT, || async {
        let s = member_object(&hub, EAST.name, "secret", "vault-drift", "creds").ok_or("not yet")?;
        (s["data"]["password"] == HD.1).then_some(()).ok_or_else(|| s.to_string())
    })
    .await;
    let patch = json!({"data": {"password": MD.1}}).to_string();
    assert_eq!(
        edit(&hub, "patch", &["secret", "creds", "-n", "vault-drift", "-p", &patch], None),
        "secret/creds patched\n"
    );

    let drifted = reported(&hub, "vault-drift", "driftedPlacements").await;
    assert_eq!(
        drifted["observedDrifts"],
        json!([{"path": "/data/password", "valueInHub": REDACTED, "valueInMember": REDACTED}]),
        "{drifted}"
    );
    let failed = reported(&hub, "vault-drift", "failedPlacements").await;
    assert_eq!(failed["condition"]["reason"], "FoundDrifts", "{failed}");

    let diffed = reported(&hub, "vault-report", "diffedPlacements").await;
    assert_eq!(
        diffed["observedDiffs"],
        json!([
            {"path": "/data/password", "valueInHub": REDACTED, "valueInMember": REDACTED},
            {"path": "/stringData/token", "valueInHub": REDACTED, "valueInMember": REDACTED},
        ]),
        "{diffed}"
    );
    assert_eq!(
        member_object(&hub, EAST.name, "secret", "vault-drift", "creds").map(|s| s["data"]["password"].clone()),
        Some(json!(MD.1)),
        "IfNotDrifted kept the member's value"
    );

    // Nowhere on the hub but in the Secrets themselves.
    for name in ["vault-drift", "vault-report"] {
        let crp = placement(&hub, name).await.expect("placement");
        nothing_leaked(&format!("placement {name}'s status"), &crp.status().cloned().unwrap_or_default().to_string());
        let out = hub.fleetctl(&["get", "crp", name, "-o", "yaml"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        nothing_leaked(&format!("fleetctl get crp {name}"), &String::from_utf8_lossy(&out.stdout));
    }
    let works = list(&hub, "work", "").await.expect("works");
    assert!(works.len() >= 2, "{works:?}");
    for w in &works {
        let status = w.status().cloned().unwrap_or_default().to_string();
        nothing_leaked(&format!("Work {}'s status", w.metadata.name), &status);
    }
    // As a user sees them. The Works' specs carry the hub's manifests (the
    // Secrets as the user applied them): only their statuses are looked at.
    let out = hub.fleetctl(&["get", "work", "-A", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).expect("fleetctl get work -o json");
    let items = printed.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
    assert_eq!(items.len(), works.len(), "{printed}");
    let statuses = Value::Array(items.iter().map(|w| w["status"].clone()).collect()).to_string();
    nothing_leaked("the Works' status in fleetctl get work -A -o json", &statuses);
    assert!(statuses.contains(REDACTED), "the reports are in the Works' status: {statuses}");
    let mut admin = hub.client(hub.running()[0]).await;
    let events = fleet_tests::objects::list_all(&mut admin, "event", "").await.expect("events");
    for e in &events {
        nothing_leaked("an event", &serde_json::to_string(e).unwrap_or_default());
    }

    // The logs, at debug level, with the reports made (the drift is looked
    // at every second: several passes have run by now).
    let agent_log = std::fs::read_to_string(hub.agent_log(EAST.name)).expect("agent log");
    assert!(agent_log.contains("DEBUG"), "the agent logs at debug level:\n{}", hub.agent_log_tail(EAST.name));
    nothing_leaked("the agent's log", &agent_log);
    for id in hub.node_ids() {
        let log = std::fs::read_to_string(hub.log_path(id)).unwrap_or_default();
        assert!(log.contains("DEBUG"), "node {id} logs at debug level:\n{}", hub.log_tail(id));
        nothing_leaked(&format!("node {id}'s log"), &log);
    }
}
