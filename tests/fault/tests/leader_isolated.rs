//! A real hub trio with a proxy on every peer link (each node dials its
//! peers through its own proxies, `--peer-dial`), and concurrent clients
//! writing, compare-and-setting, deleting and reading a few ConfigMaps
//! through random nodes while the leader is cut off from its peers and
//! healed. Clients still reach every node, the isolated leader included.
//! Two watchers follow every change throughout: one on a follower that is
//! never cut off, one moving to the next node whenever its stream breaks or
//! goes quiet. Then the checks of [`scenario`]: every acknowledged write in
//! the final consistent reads, linearizable, monotonic, watch streams
//! without gaps or duplicates, replicas identical.

mod scenario;

use fleet_tests::HubOptions;
use scenario::Scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_isolated_and_healed_under_load_keeps_the_history_linearizable() {
    let mut run = Scenario::start("leader isolated", HubOptions::default(), true, |leader| leader % 3 + 1).await;
    run.operations(150, "before the fault").await;
    let mut round = 0;
    while run.another_round(round) {
        let leader = run.hub.wait_leader().await;
        run.network.isolate(leader).expect("isolate the leader");
        run.leader_lost("leader isolated");
        run.new_leader_without(leader).await;
        run.operations(100, "with the old leader isolated").await;
        run.network.heal();
        run.hub.wait_leader().await;
        run.operations(150, "after healing").await;
        round += 1;
    }
    run.finish().await;
}
