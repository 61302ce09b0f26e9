//! A CI-sized run of the scale harness: `fleet-bench members`
//! joins 200 simulated members to a real hub trio, 50 placements (PickN of
//! 1 to 5 clusters, and two PickAll) each place their own namespace, and
//! the test checks correctness only — every placement Available, one bound
//! binding per chosen cluster and exactly one Available Work per binding,
//! no Work anywhere else. Timings belong to `bench/scale.sh`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use fleet_api::Object;
use fleet_tests::fleet::{apply_yaml, list, work_available};
use fleet_tests::hub::binary;
use fleet_tests::{eventually, Hub, HubOptions};

const MEMBERS: usize = 200;
const PLACEMENTS: usize = 50;
/// How long joining, and then the placements, may take: generous, for a
/// debug build on a shared machine (about 15 s on a lightly loaded one).
const WAIT: Duration = Duration::from_secs(360);

/// Stops the members process when the test ends, however it ends.
struct Members(Child);

impl Drop for Members {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `numberOfClusters` of placement `i` (0 = PickAll).
fn wanted(i: usize) -> usize {
    if i.is_multiple_of(25) {
        0
    } else {
        1 + i % 5
    }
}

fn documents(i: usize) -> String {
    let name = format!("scale-{i:02}");
    let policy = match wanted(i) {
        0 => "{placementType: PickAll}".to_string(),
        n => format!("{{placementType: PickN, numberOfClusters: {n}}}"),
    };
    format!(
        "---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n\
         ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: {name}}}\ndata: {{v: \"{i}\"}}\n\
         ---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {{name: {name}}}\n\
         spec:\n  resourceSelectors: [{{group: \"\", version: v1, kind: Namespace, name: {name}}}]\n  policy: {policy}\n"
    )
}

fn available(placement: &Object) -> bool {
    let conditions = placement.status().and_then(|s| s.get("conditions")).and_then(|c| c.as_array());
    conditions.into_iter().flatten().any(|c| {
        c["type"] == "ClusterResourcePlacementAvailable"
            && c["status"] == "True"
            && c["observedGeneration"].as_i64() == Some(placement.metadata.generation)
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_simulated_members_take_fifty_placements_exactly() {
    let hub = Hub::start(HubOptions::default()).await;
    let child = Command::new(binary("fleet-bench"))
        .args(["members", "--hub", &hub.endpoints(), "--tls-dir"])
        .arg(hub.pki_dir())
        .args(["--count", &MEMBERS.to_string(), "--heartbeat-seconds", "5", "--regions", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fleet-bench members");
    let mut members = Members(child);
    let stdout = members.0.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let ready = format!("ready {MEMBERS}");
    let joined = tokio::task::spawn_blocking(move || loop {
        match rx.recv_timeout(WAIT) {
            Ok(line) if line == ready => return Ok(()),
            Ok(_) => continue,
            Err(e) => return Err(format!("no `{ready}` line: {e}")),
        }
    })
    .await
    .expect("reader");
    joined.expect("members joined");

    let yaml: String = (0..PLACEMENTS).map(documents).collect();
    apply_yaml(&hub, &yaml);

    let placements = eventually("every placement Available", WAIT, || async {
        let all = list(&hub, "crp", "").await?;
        let waiting: Vec<&str> = all.iter().filter(|p| !available(p)).map(|p| p.metadata.name.as_str()).collect();
        if all.len() == PLACEMENTS && waiting.is_empty() {
            Ok(all)
        } else {
            Err(format!("{} placements, not yet Available: {waiting:?}", all.len()))
        }
    })
    .await;
    assert_eq!(placements.len(), PLACEMENTS);

    let bindings = list(&hub, "crb", "").await.expect("bindings");
    let works = list(&hub, "works", "").await.expect("works");
    // Bound clusters by placement, from the bindings.
    let mut bound: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for b in &bindings {
        let placement = b.metadata.labels.get("kubernetes-fleet.io/parent-CRP").cloned().unwrap_or_default();
        let spec = fleet_api::binding::spec_of(b);
        assert_eq!(spec.state, "Bound", "binding {} of {placement}", b.metadata.name);
        assert!(
            bound.entry(placement.clone()).or_default().insert(spec.target_cluster.clone()),
            "two bindings of {placement} for {}",
            spec.target_cluster
        );
    }
    for i in 0..PLACEMENTS {
        let name = format!("scale-{i:02}");
        let clusters = bound.get(&name).map(BTreeSet::len).unwrap_or(0);
        let expected = match wanted(i) {
            0 => MEMBERS,
            n => n,
        };
        assert_eq!(clusters, expected, "bound clusters of {name}");
    }
    // Exactly one Available Work per binding, in its cluster's namespace; nothing else.
    let mut placed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for w in &works {
        let placement = w.metadata.labels.get("kubernetes-fleet.io/parent-CRP").cloned().unwrap_or_default();
        let namespace = w.metadata.namespace.clone().unwrap_or_default();
        let cluster = namespace.strip_prefix("fleet-member-").unwrap_or(&namespace).to_string();
        assert!(work_available(w), "Work {namespace}/{} not Available", w.metadata.name);
        assert!(
            placed.entry(placement.clone()).or_default().insert(cluster.clone()),
            "two Works of {placement} on {cluster}"
        );
    }
    assert_eq!(placed, bound, "Works (by placement, cluster) differ from the bindings");
    let total: usize = bound.values().map(BTreeSet::len).sum();
    assert_eq!(works.len(), total, "stray Works");
    drop(members);
}
