//! A follower partitioned away while the others write past log compaction
//! (a snapshot every 20 entries, 5 kept behind it), then healed: the log
//! it needs is gone, so the leader sends a snapshot, which it installs and
//! goes on from. Then the checks of [`scenario`], the digest comparison
//! showing the installed state is exactly the others'.

mod scenario;

use std::time::Duration;

use fleet_tests::{eventually, HubOptions};
use scenario::Scenario;

const INSTALLED: &str = "installing snapshot from the leader";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_partitioned_past_compaction_is_caught_up_by_a_snapshot() {
    let options = HubOptions { snapshot_logs: 20, keep_logs: 5, ..HubOptions::default() };
    // The pinned watcher starts on the follower that is cut off: once it
    // installs a snapshot it has no history to resume from ("expired"), and
    // the watcher must go on from another node without a gap.
    let mut run = Scenario::start("follower past compaction", options, true, |leader| (leader + 1) % 3 + 1).await;
    run.operations(100, "before the partition").await;
    let mut round = 0;
    while run.another_round(round) {
        let leader = run.hub.wait_leader().await;
        let lagging = (leader + 1) % 3 + 1;
        let before = installs(&run, lagging);
        let others: Vec<u64> = (1..=3).filter(|id| *id != lagging).collect();
        run.network.partition(&[lagging], &others).expect("partition the follower");
        run.fault("follower partitioned past compaction");
        // Enough writes for several snapshots and purges behind them.
        run.operations(100, "with the follower cut off").await;
        run.network.heal();
        eventually("the lagging follower to install a snapshot", Duration::from_secs(60), || async {
            let now = installs(&run, lagging);
            if now > before {
                Ok(())
            } else {
                Err(format!("node {lagging} logged {now} snapshot installs"))
            }
        })
        .await;
        run.operations(100, "after healing").await;
        round += 1;
    }
    run.finish().await;
}

/// How many snapshots node `id` has logged installing.
fn installs(run: &Scenario, id: u64) -> usize {
    std::fs::read_to_string(run.hub.log_path(id)).unwrap_or_default().matches(INSTALLED).count()
}
