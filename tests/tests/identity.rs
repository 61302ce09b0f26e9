//! Identities that stop counting: a node removed from the membership, a
//! member whose credential was replaced, and what a viewer may not read.

use std::time::Duration;

use fleet_proto::fleet::{GetRequest, JoinRequest, KindRef, ListRequest, ReadOptions, WatchRequest};
use fleet_proto::peer::raft_peer_client::RaftPeerClient;
use fleet_proto::peer::Payload;
use fleet_tests::hub::connect;
use fleet_tests::objects::{apply, configmap, get_configmap};
use fleet_tests::{eventually, Hub, HubOptions};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::Code;

const WAIT: Duration = Duration::from_secs(30);

fn pki(hub: &Hub, name: &str) -> Vec<u8> {
    std::fs::read(hub.pki_dir().join(name)).unwrap_or_default()
}

/// A peer-service client of node `to` presenting `user`'s certificate.
fn peer_as(hub: &Hub, user: &str, to: u64) -> RaftPeerClient<Channel> {
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(pki(hub, "ca.pem")))
        .identity(Identity::from_pem(pki(hub, &format!("{user}.pem")), pki(hub, &format!("{user}-key.pem"))));
    let channel = Endpoint::from_shared(format!("https://{}", hub.endpoint(to)))
        .and_then(|e| e.tls_config(tls))
        .map(|e| e.connect_lazy())
        .expect("endpoint");
    RaftPeerClient::new(channel)
}

fn status_payload() -> Payload {
    Payload { data: fleet_raft::codec::encode(&Some(false)).expect("encode") }
}

/// Every peer call a node can make, with `payload` (decoded only once the
/// caller is admitted), as node `user` to node `to`: the codes returned.
async fn every_peer_call(hub: &Hub, user: &str, to: u64, payload: &Payload) -> Vec<(&'static str, Result<(), String>)> {
    let mut c = peer_as(hub, user, to);
    let p = || payload.clone();
    let result = |r: Result<tonic::Response<Payload>, tonic::Status>| {
        r.map(|_| ()).map_err(|e| format!("{:?}: {}", e.code(), e.message()))
    };
    vec![
        ("append_entries", result(c.append_entries(p()).await)),
        ("vote", result(c.vote(p()).await)),
        ("install_snapshot", result(c.install_snapshot(p()).await)),
        ("forward", result(c.forward(p()).await)),
        ("read_index", result(c.read_index(p()).await)),
        ("change_membership", result(c.change_membership(p()).await)),
        ("member", result(c.member(p()).await)),
        ("node_status", result(c.node_status(p()).await)),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_node_cannot_propose_read_vote_or_rejoin_with_its_old_certificate() {
    let mut hub = Hub::start(HubOptions { pki_nodes: 4, ..HubOptions::default() }).await;
    let leader = hub.wait_leader().await;
    let removed = leader % 3 + 1;
    let others: Vec<u64> = (1..=3).filter(|id| *id != removed).collect();
    let user = format!("node-{removed}");
    // Before: a member's certificate is admitted (the empty payload then
    // fails to decode).
    let err = peer_as(&hub, &user, others[0]).forward(Payload::default()).await.expect_err("empty proposal");
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");

    let out = hub.fleetctl(&["cluster", "remove-node", "--id", &removed.to_string()]);
    assert!(out.status.success(), "remove-node: {}", String::from_utf8_lossy(&out.stderr));
    // Refused by every remaining node once it has applied the removal.
    for id in &others {
        eventually(&format!("node {id} to refuse node {removed}"), WAIT, || async {
            match peer_as(&hub, &user, *id).node_status(status_payload()).await {
                Err(e) if e.code() == Code::PermissionDenied && e.message().contains("was removed") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        // Every call: propose (forward), read (read_index, node_status),
        // vote, replicate, change membership, member calls.
        let vote = openraft::raft::VoteRequest::<u64>::new(openraft::Vote::new(99, removed), None);
        let vote = Payload { data: fleet_raft::codec::encode(&vote).expect("encode") };
        for (call, result) in every_peer_call(&hub, &user, *id, &vote).await {
            let err = result.expect_err(call);
            assert!(err.contains("PermissionDenied") && err.contains("was removed"), "{call} to node {id}: {err}");
        }
    }
    // A node never added is refused everything but replication (which a
    // node that missed an addition needs from the new leader).
    for (call, result) in every_peer_call(&hub, "node-4", others[0], &Payload::default()).await {
        let err = result.expect_err(call);
        if call == "append_entries" || call == "install_snapshot" {
            assert!(err.contains("InvalidArgument"), "{call}: {err}");
        } else {
            assert!(err.contains("PermissionDenied") && err.contains("not a member"), "{call}: {err}");
        }
    }
    // The remaining members still talk to each other.
    peer_as(&hub, &format!("node-{}", others[0]), others[1]).node_status(status_payload()).await.expect("a member");

    // Restarted with its old data and certificate (and --init), it does not
    // get back in: the hub keeps two members, writes and refuses it.
    hub.stop(removed);
    hub.start_node(removed, true);
    let mut admin = hub.client(others[0]).await;
    let rv = apply(&mut admin, vec![configmap("id", "after", "v")]).await.expect("write without the removed node");
    for id in &others {
        let status = hub.status(*id).await.expect("status");
        let members: Vec<u64> = status.members.iter().map(|m| m.id).collect();
        assert_eq!(members, others, "node {id}: {status:?}");
        assert!(status.term < 99, "the removed node's vote moved the term: {status:?}");
        let mut c = hub.client(*id).await;
        get_configmap(&mut c, "id", "after", rv).await.expect("the write on the remaining members");
        let err = peer_as(&hub, &user, *id).read_index(Payload::default()).await.expect_err("still refused");
        assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_cannot_read_the_hubs_internal_kinds() {
    let hub = Hub::start(HubOptions::default()).await;
    let (token, _) = hub.token("east", "10m");
    let id = token.split('.').next().unwrap_or_default().to_string();
    let token_kind = || Some(KindRef { kind: "BootstrapToken".into(), api_version: "fleet.internal/v1".into() });
    let get = GetRequest {
        kind: token_kind(),
        namespace: "fleet-system".into(),
        name: id,
        read: Some(ReadOptions { consistent: true, ..Default::default() }),
    };
    let list = |kind: &str| ListRequest {
        kind: Some(KindRef { kind: kind.into(), api_version: "fleet.internal/v1".into() }),
        namespace: String::new(),
        all_namespaces: true,
        label_selector: String::new(),
        read: Some(ReadOptions { consistent: true, ..Default::default() }),
    };
    let mut admin = hub.client(1).await;
    admin.get(get.clone()).await.expect("admin reads a token");
    let mut viewer = hub.client_as(2, "viewer").await;
    let err = viewer.get(get).await.expect_err("viewer reads a token");
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    assert!(err.message().contains("fleet.internal"), "{err}");
    for kind in ["BootstrapToken", "MemberCredential"] {
        let err = viewer.list(list(kind)).await.expect_err(kind);
        assert_eq!(err.code(), Code::PermissionDenied, "{kind}: {err}");
    }
    let watch = WatchRequest { kind: token_kind(), all_namespaces: true, ..Default::default() };
    let err = viewer.watch(watch).await.expect_err("viewer watches tokens");
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    // The viewer still reads the fleet.
    let cms = ListRequest {
        kind: fleet_tests::objects::kind("cm"),
        namespace: "default".into(),
        all_namespaces: false,
        label_selector: String::new(),
        read: None,
    };
    viewer.list(cms).await.expect("viewer lists configmaps");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_watch_ends_when_its_credential_is_replaced_and_the_old_certificate_is_refused() {
    let mut hub = Hub::start(HubOptions::default()).await;
    hub.start_agent("east", &[]);
    let works = || Some(KindRef { kind: "works".into(), api_version: String::new() });
    let own_works = || ListRequest {
        kind: works(),
        namespace: "fleet-member-east".into(),
        all_namespaces: false,
        label_selector: String::new(),
        read: Some(ReadOptions { consistent: true, ..Default::default() }),
    };
    let tls = eventually("east to join and its certificate to work", WAIT, || async {
        let tls = hub.member_tls("east").ok_or("no certificate yet")?;
        connect(&hub.endpoint(2), tls.clone()).list(own_works()).await.map(|_| tls).map_err(|e| e.to_string())
    })
    .await;
    // The agent is stopped so only this test uses its certificate.
    hub.kill_agent("east");
    let mut old = connect(&hub.endpoint(2), tls.clone());
    let watch = WatchRequest { kind: works(), namespace: "fleet-member-east".into(), ..Default::default() };
    let mut stream = old.watch(watch).await.expect("the member watches its Work").into_inner();

    // A new join for the same cluster replaces its credential.
    let (token, _) = hub.token("east", "10m");
    let ca = pki(&hub, "ca.pem");
    let anonymous = connect(&hub.endpoint(1), ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca)));
    let (_, csr_pem) = fleet_agent::identity::new_key_and_csr().expect("csr");
    anonymous.clone().join(JoinRequest { cluster: "east".into(), token, csr_pem }).await.expect("join again");
    // The watch on node 2 ends with the reason (after its BOOKMARK, and any
    // Work events before the change).
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match stream.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => return Err("the stream ended without a reason".to_string()),
                Err(e) => return Ok(e),
            }
        }
    })
    .await
    .expect("the watch to end within 30 s")
    .expect("a reason");
    assert_eq!(ended.code(), Code::PermissionDenied, "{ended}");
    assert!(ended.message().contains("no longer a credential"), "{ended}");
    // And every node refuses the old certificate once it has applied the
    // replacement (a follower may trail the leader's commit by a moment).
    for id in 1..=3 {
        eventually(&format!("node {id} to refuse the replaced certificate"), WAIT, || async {
            match connect(&hub.endpoint(id), tls.clone()).list(own_works()).await {
                Err(e) if e.code() == Code::PermissionDenied => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }
}

/// A certificate named `cn` signed with the member CA key every node holds
/// (what a thief of one node's files could make), as a client identity.
fn forged_with_member_ca(hub: &Hub, cn: &str) -> Identity {
    let member_ca = String::from_utf8_lossy(&pki(hub, "member-ca.pem")).to_string();
    let key = rcgen::KeyPair::from_pem(&String::from_utf8_lossy(&pki(hub, "member-ca-key.pem"))).expect("key");
    let issuer = rcgen::Issuer::from_ca_cert_pem(&member_ca, key).expect("issuer");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name.push(rcgen::DnType::CommonName, cn);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let leaf_key = rcgen::KeyPair::generate().expect("key");
    let cert = params.signed_by(&leaf_key, &issuer).expect("sign");
    Identity::from_pem(format!("{}{member_ca}", cert.pem()), leaf_key.serialize_pem())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_member_ca_on_the_nodes_cannot_make_an_admin_a_viewer_or_a_node() {
    let hub = Hub::start(HubOptions::default()).await;
    // The root key is not among the files a node reads.
    assert!(!hub.pki_dir().join("ca-key.pem").exists());
    assert!(hub.pki_dir().join("root").join("ca-key.pem").exists());
    let ca = || Certificate::from_pem(pki(&hub, "ca.pem"));
    for cn in ["admin", "viewer"] {
        let tls = ClientTlsConfig::new().ca_certificate(ca()).identity(forged_with_member_ca(&hub, cn));
        let mut client = connect(&hub.endpoint(1), tls);
        let request = ListRequest {
            kind: fleet_tests::objects::kind("cm"),
            namespace: "default".into(),
            all_namespaces: false,
            label_selector: String::new(),
            read: None,
        };
        let err = client.list(request).await.expect_err(cn);
        assert_eq!(err.code(), Code::PermissionDenied, "{cn}: {err}");
        assert!(err.message().contains("issued by the member CA"), "{cn}: {err}");
    }
    let tls = ClientTlsConfig::new().ca_certificate(ca()).identity(forged_with_member_ca(&hub, "system:fleet:node:1"));
    let channel = Endpoint::from_shared(format!("https://{}", hub.endpoint(2)))
        .and_then(|e| e.tls_config(tls))
        .map(|e| e.connect_lazy())
        .expect("endpoint");
    let err = RaftPeerClient::new(channel).node_status(status_payload()).await.expect_err("a forged node");
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    assert!(err.message().contains("is not a hub node"), "{err}");
}
