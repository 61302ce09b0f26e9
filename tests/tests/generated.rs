//! Files generated from the pinned Go modules and checked in, regenerated
//! and compared: a stale copy fails here with the command that refreshes it.

use std::process::{Command, Stdio};

use fleet_tests::realkube::{go_binary, repository};

/// Runs `go run ./cmd/COMMAND OUT` in `realkube/` and compares OUT with
/// the checked-in `node/src/kube/FILE`.
fn assert_current(command: &str, file: &str) {
    let root = repository();
    let dir = tempfile::tempdir().expect("temp dir");
    let fresh = dir.path().join(file);
    let out = Command::new(go_binary())
        .args(["run", &format!("./cmd/{command}")])
        .arg(&fresh)
        .current_dir(root.join("realkube"))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run go run ./cmd/{command}: {e}"));
    assert!(out.status.success(), "go run ./cmd/{command} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let embedded = std::fs::read(root.join("node/src/kube").join(file)).expect("the checked-in file");
    assert!(
        std::fs::read(&fresh).expect("the fresh file") == embedded,
        "node/src/kube/{file} differs from what the pinned Kubernetes modules give: \
         regenerate it with (cd realkube && go run ./cmd/{command} ../node/src/kube/{file})"
    );
}

#[test]
fn the_hubs_kubernetes_protobuf_descriptors_are_current() {
    assert_current("kubeproto", "kubernetes-api.protoset");
}

#[test]
fn the_hubs_list_of_fields_json_omits_when_zero_is_current() {
    assert_current("kubezero", "kubernetes-api-omitempty.txt");
}
