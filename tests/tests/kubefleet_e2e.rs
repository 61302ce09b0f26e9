//! A CI-sized selection of KubeFleet's own end-to-end suite, run unmodified
//! against a Fleet hub and three real member clusters (see
//! `fleet_tests::kubefleet_e2e`; the whole suite runs with
//! `conformance/kubefleet-e2e.sh`). Every selected spec must pass.

use std::sync::atomic::AtomicBool;

use fleet_tests::kubefleet_e2e::Environment;

/// Placements of each type, their statuses and what lands on the members,
/// and their deletion through KubeFleet's finalizer-held cleanup.
const SELECTION: &str = "placing resources using a CRP with no placement policy specified\
|placing resources using a CRP of PickAll placement type with no affinities specified\
|placing resources using a CRP of PickAll placement type with affinities specified, label selector only\
|placing resources using a CRP of PickFixed placement type pick some clusters";

#[tokio::test(flavor = "multi_thread")]
async fn kubefleet_end_to_end_selection_passes() {
    let mut environment = Environment::start().await;
    let log = environment.hub.hub.dir.path().join("kubefleet-e2e.log");
    let summary = tokio::task::block_in_place(|| environment.run(SELECTION, "", 1, &log, &AtomicBool::new(false)));
    eprintln!("{}", summary.line());
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(summary.suite_failure.is_none(), "{:?}\n{log_text}", summary.suite_failure);
    assert!(summary.failed.is_empty(), "failed: {:#?}\n{log_text}", summary.failed);
    assert!(summary.passed.len() >= 8, "too few specs ran: {:#?}\n{log_text}", summary.passed);
}
