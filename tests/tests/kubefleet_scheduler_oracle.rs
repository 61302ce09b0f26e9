//! KubeFleet's own scheduler as an oracle (docs/conformance.md): KubeFleet's
//! hub agent (github.com/kubefleet-dev/kubefleet, pinned: its placement
//! controller and scheduler) runs against a real kube-apiserver with
//! KubeFleet's CRDs and simulated members, Fleet is a real trio with one
//! agent per pool cluster, and the oracle program of
//! `conformance/kubefleet-scheduler/` applies a fixed seed's random
//! placement scenarios (ClusterResourcePlacements and ResourcePlacements)
//! to both and compares the policy snapshots' cluster decisions, the
//! bindings, the Scheduled condition and the ScheduleFailed entries, also
//! after clusters change, placements get new policies and clusters leave
//! or go silent. Every difference not on the written-down list
//! (`conformance/kubefleet-scheduler/written-down.json`, each with its
//! reason) fails the test, printed.

use std::time::Instant;

use fleet_tests::oracle::KUBEFLEET;

/// The generator's seed for the test suite.
const SEED: u64 = 1;
/// How many scenarios the test suite runs.
const SCENARIOS: u64 = 60;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_schedules_as_kubefleets_own_scheduler() {
    let started = Instant::now();
    let sides = KUBEFLEET.start_sides("kubefleet").await;
    let (success, stdout, stderr) = KUBEFLEET.run(&sides, "--kubefleet-kubeconfig", SEED, SCENARIOS);
    let differences: Vec<&str> = stdout.split("\ndifference: ").skip(1).collect();
    let tail: Vec<&str> = stdout.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(success, "the oracle failed:\n{stderr}\nthe end of its output:\n{}", tail.join("\n"));
    let (scenarios, found, written) =
        KUBEFLEET.summary(&stdout).unwrap_or_else(|| panic!("no summary line:\n{stdout}"));
    for line in stdout.lines().filter(|l| l.starts_with("kubefleet-scheduler: ")) {
        eprintln!("{line}");
    }
    assert_eq!(scenarios, SCENARIOS, "{stdout}");
    assert_eq!(found, 0, "differences not written down:\n{}", differences.join("\ndifference: "));
    // The comparison was about something: most placements selected
    // clusters, some were unfulfilled, some spread.
    let numbers = KUBEFLEET.numbers(&stdout, "compared");
    assert!(
        matches!(numbers[..], [placements, selecting, _, unfulfilled, spread]
            if placements >= SCENARIOS && selecting * 2 > placements && unfulfilled > 0 && spread > 0),
        "{numbers:?}"
    );
    // Some were ResourcePlacements.
    let namespaced = KUBEFLEET.numbers(&stdout, "of which ResourcePlacements:");
    assert!(matches!(namespaced[..], [n] if n * 6 > numbers[0]), "{namespaced:?}");
    // And compared again after their clusters changed or they scaled.
    let again = KUBEFLEET.numbers(&stdout, "after changes:");
    assert!(matches!(again[..], [n] if n * 2 > numbers[0]), "{again:?}");
    // And again after some got new policies.
    let edited = KUBEFLEET.numbers(&stdout, "after policy edits:");
    assert!(matches!(edited[..], [n] if n * 8 > numbers[0]), "{edited:?}");
    // And again after a scenario's own member left or went silent.
    let members = KUBEFLEET.numbers(&stdout, "after a member left or went silent:");
    assert!(matches!(members[..], [n] if n * 12 > numbers[0]), "{members:?}");
    eprintln!("{written} written-down differences; the test took {:.1?}", started.elapsed());
}
