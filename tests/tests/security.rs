//! Who may do what: mTLS with the fleet CA, roles from certificates, node
//! identity on peer traffic, optimistic concurrency.

use fleet_proto::fleet::{DeleteRequest, GetRequest, ReadOptions};
use fleet_proto::peer::raft_peer_client::RaftPeerClient;
use fleet_proto::peer::Payload;
use fleet_tests::hub::connect;
use fleet_tests::objects::{apply, configmap, get_configmap, kind};
use fleet_tests::{Hub, HubOptions};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

fn read(hub: &Hub, name: &str) -> Vec<u8> {
    std::fs::read(hub.pki_dir().join(name)).unwrap_or_default()
}

fn get_request() -> GetRequest {
    GetRequest { kind: kind("cm"), namespace: "a".into(), name: "x".into(), read: Some(ReadOptions::default()) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_without_a_fleet_certificate_are_refused() {
    let hub = Hub::start(HubOptions::default()).await;

    // No client certificate at all.
    let mut anonymous =
        connect(&hub.endpoint(1), ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(&hub, "ca.pem"))));
    let err = anonymous.get(get_request()).await.expect_err("anonymous read must fail");
    assert_eq!(err.code(), tonic::Code::Unauthenticated, "{err}");

    // A certificate from another CA (we still trust the right server CA).
    let other = hub.dir.path().join("other-pki");
    let out = hub.fleetctl(&["pki", "init", "--dir", other.to_str().unwrap_or(""), "--nodes", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let foreign = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(&hub, "ca.pem"))).identity(
        Identity::from_pem(
            std::fs::read(other.join("admin.pem")).unwrap_or_default(),
            std::fs::read(other.join("admin-key.pem")).unwrap_or_default(),
        ),
    );
    let mut foreign = connect(&hub.endpoint(1), foreign);
    assert!(foreign.get(get_request()).await.is_err(), "a certificate from another CA must be refused");
    assert!(foreign
        .apply(fleet_proto::fleet::ApplyRequest { documents: vec![configmap("a", "x", "1")], sources: vec![] })
        .await
        .is_err());

    // A certificate of the fleet CA naming no role.
    let out = hub.fleetctl(&["pki", "issue-client", "--dir", hub.pki_dir().to_str().unwrap_or(""), "--name", "robot"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut robot = hub.client_as(1, "robot").await;
    let err = robot.get(get_request()).await.expect_err("unknown role must be refused");
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err}");

    // A hub node's certificate is for peer traffic only.
    let mut node = hub.client_as(1, "node-2").await;
    let err = node.get(get_request()).await.expect_err("node certificate on the user API");
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_reads_but_cannot_write() {
    let hub = Hub::start(HubOptions::default()).await;
    let mut admin = hub.client(1).await;
    let rv = apply(&mut admin, vec![configmap("a", "x", "1")]).await.expect("admin apply");
    let mut viewer = hub.client_as(2, "viewer").await;
    let obj = get_configmap(&mut viewer, "a", "x", rv).await.expect("viewer read");
    assert_eq!(obj.metadata.name, "x");
    let err = apply(&mut viewer, vec![configmap("a", "y", "1")]).await.expect_err("viewer apply");
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err}");
    assert!(err.message().contains("cannot create resource \"configmaps\""), "{err}");
    let err = viewer
        .delete(DeleteRequest { kind: kind("cm"), namespace: "a".into(), name: "x".into(), resource_version: 0 })
        .await
        .expect_err("viewer delete");
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    let out = hub.fleetctl(&["--user", "viewer", "apply", "-f", "-"]);
    assert!(!out.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_resource_version_gets_a_conflict() {
    let hub = Hub::start(HubOptions::default()).await;
    let mut admin = hub.client(1).await;
    let rv1 = apply(&mut admin, vec![configmap("a", "x", "1")]).await.expect("create");
    let rv2 = apply(&mut admin, vec![configmap("a", "x", "2")]).await.expect("update");
    assert!(rv2 > rv1);
    let mut stale: serde_json::Value = serde_json::from_slice(&configmap("a", "x", "3")).unwrap_or_default();
    stale["metadata"]["resourceVersion"] = serde_json::Value::String(rv1.to_string());
    let err = apply(&mut admin, vec![serde_json::to_vec(&stale).unwrap_or_default()]).await.expect_err("stale write");
    assert_eq!(err.code(), tonic::Code::Aborted, "{err}");
    assert!(err.message().contains(&format!("resourceVersion {rv2}")), "names the current version: {err}");
    let obj = get_configmap(&mut admin, "a", "x", 0).await.expect("get");
    assert_eq!(obj.rest["data"]["value"], "2", "the stale write changed nothing");
    stale["metadata"]["resourceVersion"] = serde_json::Value::String(rv2.to_string());
    apply(&mut admin, vec![serde_json::to_vec(&stale).unwrap_or_default()]).await.expect("current version wins");
    // Delete with a stale precondition too.
    let err = admin
        .delete(DeleteRequest { kind: kind("cm"), namespace: "a".into(), name: "x".into(), resource_version: rv1 })
        .await
        .expect_err("stale delete");
    assert_eq!(err.code(), tonic::Code::Aborted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_traffic_needs_the_certificate_of_the_node_it_claims_to_be() {
    let hub = Hub::start(HubOptions::default()).await;
    let vote: openraft::raft::VoteRequest<u64> = openraft::raft::VoteRequest::new(openraft::Vote::new(99, 1), None);
    let data = fleet_raft::codec::encode(&vote).expect("encode");
    let peer_client = |user: &str| {
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(read(&hub, "ca.pem")))
            .identity(Identity::from_pem(read(&hub, &format!("{user}.pem")), read(&hub, &format!("{user}-key.pem"))));
        let channel = Endpoint::from_shared(format!("https://{}", hub.endpoint(3)))
            .and_then(|e| e.tls_config(tls))
            .map(|e| e.connect_lazy())
            .expect("endpoint");
        RaftPeerClient::new(channel)
    };
    // Node 2's certificate claiming to be candidate node 1.
    let err = peer_client("node-2").vote(Payload { data: data.clone() }).await.expect_err("impersonation");
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err}");
    assert!(err.message().contains("certificate names node 2"), "{err}");
    // The admin certificate may not speak Raft at all.
    let err = peer_client("admin").vote(Payload { data }).await.expect_err("admin on peer service");
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err}");
    // The term-99 vote was never considered: the cluster keeps its leader and a low term.
    let status = hub.status(3).await.expect("status");
    assert!(status.term < 99, "{status:?}");
}
