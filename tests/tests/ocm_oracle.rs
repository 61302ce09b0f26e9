//! Open Cluster Management's own placement controller as an oracle
//! (docs/conformance.md): OCM's controller (open-cluster-management.io/ocm,
//! pinned) runs against a real kube-apiserver with OCM's CRDs, Fleet is a
//! real trio with one agent per pool cluster, and the oracle program of
//! `conformance/ocm-placement/` applies a fixed seed's random OCM scenarios
//! to both and compares the PlacementDecisions, the Placement status and
//! conditions, and the events' text. Every difference not on the
//! written-down list (`conformance/ocm-placement/written-down.json`, each
//! with its reason) fails the test, printed.

use std::process::{Command, Stdio};
use std::time::Instant;

use fleet_tests::fleet::apply_yaml;
use fleet_tests::kube::KubeHub;
use fleet_tests::oracle::{oracle_binary, oracle_source, pool, summary};
use fleet_tests::realkube::{ClusterOptions, RealCluster};

/// The generator's seed for the test suite.
const SEED: u64 = 1;
/// How many scenarios the test suite runs.
const SCENARIOS: u64 = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_decides_as_ocms_own_placement_controller() {
    let started = Instant::now();
    let oracle = oracle_binary();
    let pool = pool();
    assert!(pool.len() >= 4, "the oracle's pool: {pool:?}");
    // OCM's side starts while Fleet's does.
    let ocm = std::thread::spawn(|| RealCluster::start_with("ocm", &ClusterOptions { nodes: 0, ..Default::default() }));
    let mut kube = KubeHub::start().await;
    for cluster in &pool {
        apply_yaml(
            &kube.hub,
            &format!(
                "apiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata: {{name: {}}}\nspec: {{heartbeatPeriodSeconds: 1}}\n",
                cluster.name
            ),
        );
        let flags: Vec<&str> = cluster.flags.iter().map(String::as_str).collect();
        kube.hub.start_agent(&cluster.name, &flags);
    }
    let ocm = ocm.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
    eprintln!("OCM's API server, Fleet and {} agents up in {:.1?}", pool.len(), started.elapsed());

    let out = Command::new(&oracle)
        .arg("--ocm-kubeconfig")
        .arg(&ocm.kubeconfig)
        .arg("--fleet-kubeconfig")
        .arg(&kube.admin)
        .arg("--written-down")
        .arg(oracle_source().join("written-down.json"))
        .args(["--seed", &SEED.to_string(), "--scenarios", &SCENARIOS.to_string()])
        .stdin(Stdio::null())
        .output()
        .expect("run the OCM oracle");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let differences: Vec<&str> = stdout.split("\ndifference: ").skip(1).collect();
    assert!(out.status.success(), "the oracle failed:\n{stdout}\n{stderr}");
    let (scenarios, found, written) = summary(&stdout).unwrap_or_else(|| panic!("no summary line:\n{stdout}"));
    for line in stdout.lines().filter(|l| l.starts_with("ocm-placement: ")) {
        eprintln!("{line}");
    }
    assert_eq!(scenarios, SCENARIOS, "{stdout}");
    assert_eq!(found, 0, "differences not written down:\n{}", differences.join("\ndifference: "));
    // The comparison was about something: most placements decided clusters.
    let compared = stdout.lines().find(|l| l.starts_with("ocm-placement: compared ")).unwrap_or_default().to_string();
    let numbers: Vec<u64> = compared.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    assert!(
        matches!(numbers[..], [placements, deciding, _, grouped] if placements >= SCENARIOS && deciding * 3 > placements && grouped > 0),
        "{compared}"
    );
    eprintln!("{written} written-down differences; the test took {:.1?}", started.elapsed());
}
