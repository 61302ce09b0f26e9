//! Files generated from the pinned Go modules and checked in, regenerated
//! and compared: a stale copy fails here with the command that refreshes it.

use std::process::{Command, Stdio};

use fleet_tests::realkube::{go_binary, repository};

#[test]
fn the_hubs_kubernetes_protobuf_descriptors_are_current() {
    let root = repository();
    let dir = tempfile::tempdir().expect("temp dir");
    let fresh = dir.path().join("kubernetes-api.protoset");
    let out = Command::new(go_binary())
        .args(["run", "./cmd/kubeproto"])
        .arg(&fresh)
        .current_dir(root.join("realkube"))
        .stdin(Stdio::null())
        .output()
        .expect("run go run ./cmd/kubeproto");
    assert!(out.status.success(), "go run ./cmd/kubeproto failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let embedded = std::fs::read(root.join("node/src/kube/kubernetes-api.protoset")).expect("embedded descriptors");
    assert!(
        std::fs::read(&fresh).expect("fresh descriptors") == embedded,
        "node/src/kube/kubernetes-api.protoset differs from what the pinned Kubernetes modules give: \
         regenerate it with (cd realkube && go run ./cmd/kubeproto ../node/src/kube/kubernetes-api.protoset)"
    );
}

#[test]
fn the_hubs_list_of_fields_json_omits_when_zero_is_current() {
    let root = repository();
    let dir = tempfile::tempdir().expect("temp dir");
    let fresh = dir.path().join("kubernetes-api-omitempty.txt");
    let out = Command::new(go_binary())
        .args(["run", "./cmd/kubezero"])
        .arg(&fresh)
        .current_dir(root.join("realkube"))
        .stdin(Stdio::null())
        .output()
        .expect("run go run ./cmd/kubezero");
    assert!(out.status.success(), "go run ./cmd/kubezero failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let embedded = std::fs::read(root.join("node/src/kube/kubernetes-api-omitempty.txt")).expect("embedded field list");
    assert!(
        std::fs::read(&fresh).expect("fresh field list") == embedded,
        "node/src/kube/kubernetes-api-omitempty.txt differs from what the pinned Kubernetes modules give: \
         regenerate it with (cd realkube && go run ./cmd/kubezero ../node/src/kube/kubernetes-api-omitempty.txt)"
    );
}
