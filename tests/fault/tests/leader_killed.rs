//! The leader SIGKILLed under load and restarted on its data dir: a new
//! leader takes over, the old one rejoins as a follower and catches up.
//! Then the checks of [`scenario`]: every acknowledged write in the final
//! consistent reads, linearizable, monotonic, watch streams without gaps or
//! duplicates, replicas identical at the same applied index.

mod scenario;

use fleet_tests::HubOptions;
use scenario::Scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_killed_under_load_and_restarted_loses_no_acknowledged_write() {
    // The pinned watcher starts on the leader, so the first kill is of its
    // node: it waits for the node, which comes back with no history to
    // resume from ("expired"), and moves on to the next without a gap.
    let mut run = Scenario::start("leader SIGKILL", HubOptions::default(), true, |leader| leader).await;
    run.operations(150, "before the kill").await;
    let mut round = 0;
    while run.another_round(round) {
        let leader = run.hub.wait_leader().await;
        run.hub.kill(leader);
        run.leader_lost("leader SIGKILL");
        run.new_leader_without(leader).await;
        run.operations(100, "with the old leader dead").await;
        run.hub.start_node(leader, true);
        run.hub.wait_leader().await;
        run.operations(150, "after the restart").await;
        round += 1;
    }
    run.finish().await;
}
