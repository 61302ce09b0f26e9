//! A ManifestWork's server-side apply `ignoreFields` on a real trio with a
//! real agent (docs/spec/ocm.md): a field under `OnSpokePresent` keeps the
//! member's value whatever the ManifestWork says; one under `OnSpokeChange`
//! keeps a member's edit until the ManifestWork asks a new value; every
//! other field follows the ManifestWork. Paths that are not plain are
//! refused with the field and why.

use fleet_tests::fleet::{apply_yaml, fleet_with, member_object, Member, WAIT};
use fleet_tests::{eventually, Hub};

const C: Member = Member { name: "ign-1", labels: &[], nodes: 1, cpu: 2 };

/// The ManifestWork: a ConfigMap with `size`, `mode` and `other`.
fn manifest_work(size: &str, mode: &str, other: &str) -> String {
    format!(
        "apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {{name: cfg, namespace: ign-1}}
spec:
  workload:
    manifests:
      - apiVersion: v1
        kind: Namespace
        metadata: {{name: app}}
      - apiVersion: v1
        kind: ConfigMap
        metadata: {{name: cfg, namespace: app}}
        data: {{size: \"{size}\", mode: \"{mode}\", other: \"{other}\"}}
  manifestConfigs:
    - resourceIdentifier: {{resource: configmaps, name: cfg, namespace: app}}
      updateStrategy:
        type: ServerSideApply
        serverSideApply:
          ignoreFields:
            - {{condition: OnSpokePresent, jsonPointers: [/data/size]}}
            - {{condition: OnSpokeChange, jsonPaths: [.data.mode]}}
"
    )
}

/// Waits until the member's ConfigMap data reads `want` (size, mode, other).
async fn wait_data(hub: &Hub, want: (&str, &str, &str)) {
    eventually(&format!("member data {want:?}"), WAIT, || async {
        let cm = member_object(hub, "ign-1", "configmap", "app", "cfg").ok_or("no ConfigMap yet")?;
        let field = |k: &str| cm["data"][k].as_str().unwrap_or_default().to_string();
        let got = (field("size"), field("mode"), field("other"));
        if (got.0.as_str(), got.1.as_str(), got.2.as_str()) == want {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    })
    .await;
}

/// Edits the member's ConfigMap behind Fleet's back.
fn edit_on_member(hub: &Hub, patch: &str) {
    let out = hub.edit_member("ign-1", "patch", &["configmap", "cfg", "-n", "app", "-p", patch], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_fields_keep_the_members_values_as_their_condition_says() {
    let hub = fleet_with(&[&C], &["--drift-check-interval", "2s"]).await;
    apply_yaml(&hub, &manifest_work("1", "a", "x"));
    wait_data(&hub, ("1", "a", "x")).await;

    // Someone on the member edits all three; drift correction puts back
    // only the field the ManifestWork owns outright.
    edit_on_member(&hub, r#"{"data":{"size":"5","mode":"b","other":"y"}}"#);
    wait_data(&hub, ("5", "b", "x")).await;

    // The ManifestWork changes every field: size stays the member's
    // (OnSpokePresent), mode takes the new value (OnSpokeChange: the hub
    // asks anew), other follows.
    apply_yaml(&hub, &manifest_work("2", "c", "x2"));
    wait_data(&hub, ("5", "c", "x2")).await;

    // A member edit of mode stays while the ManifestWork asks the same.
    edit_on_member(&hub, r#"{"data":{"mode":"d"}}"#);
    apply_yaml(&hub, &manifest_work("3", "c", "x3"));
    wait_data(&hub, ("5", "d", "x3")).await;

    let bad = manifest_work("1", "a", "x")
        .replace("jsonPointers: [/data/size]", "jsonPointers: [data/size]")
        .replace("jsonPaths: [.data.mode]", "jsonPaths: [\".data[*]\"]");
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&bad));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused");
    assert!(said.contains(r#"serverSideApply.ignoreFields[0].jsonPointers[0]: Invalid value: "data/size""#), "{said}");
    assert!(said.contains("ignoreFields[1].jsonPaths[0]") && said.contains("no wildcards"), "{said}");
}
