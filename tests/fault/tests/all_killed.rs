//! Every node SIGKILLed at once under load, then all restarted on their
//! data dirs: whatever was acknowledged was durable on a majority and is
//! still there. No watchers (a restarted node keeps no watch history to
//! resume from); the other checks of [`scenario`] apply.

mod scenario;

use fleet_tests::HubOptions;
use scenario::Scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_nodes_killed_at_once_and_restarted_lose_no_acknowledged_write() {
    let mut run = Scenario::start("all killed", HubOptions::default(), false, |leader| leader).await;
    run.operations(150, "before the kill").await;
    let mut round = 0;
    while run.another_round(round) {
        for id in 1..=3 {
            run.hub.kill(id);
        }
        run.leader_lost("all SIGKILL");
        for id in 1..=3 {
            run.hub.start_node(id, true);
        }
        run.hub.wait_leader().await;
        run.operations(200, "after the restart").await;
        round += 1;
    }
    run.finish().await;
}
