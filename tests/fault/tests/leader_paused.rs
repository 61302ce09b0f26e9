//! The leader paused with SIGSTOP under load: the others elect a new
//! leader; on SIGCONT the old one wakes up still believing it leads, with
//! requests in flight, and must not acknowledge anything that breaks
//! linearizability (its stale term is refused; reads through it are
//! confirmed by a quorum). Then the checks of [`scenario`].

mod scenario;

use std::time::Duration;

use fleet_tests::HubOptions;
use scenario::Scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_that_wakes_up_believing_it_leads_causes_no_violation() {
    let mut run = Scenario::start("leader SIGSTOP", HubOptions::default(), true, |leader| leader % 3 + 1).await;
    run.operations(150, "before the pause").await;
    let mut round = 0;
    while run.another_round(round) {
        let leader = run.hub.wait_leader().await;
        run.hub.signal(leader, "STOP");
        run.leader_lost("leader SIGSTOP");
        let successor = run.new_leader_without(leader).await;
        // Status asks every peer with a 1 s deadline: the paused node, which
        // answers nothing, is reported unreachable, not waited on.
        let status = tokio::time::timeout(Duration::from_secs(10), run.hub.status(successor))
            .await
            .expect("cluster status answered while the old leader is paused")
            .expect("cluster status");
        let paused = status.members.iter().find(|m| m.id == leader).expect("the paused node listed");
        assert!(!paused.reachable, "the paused node {leader} reported reachable: {status:?}");
        run.operations(100, "with the old leader paused").await;
        run.hub.signal(leader, "CONT");
        let after = run.hub.wait_leader().await;
        assert_ne!(after, 0, "a leader after the old one woke up (was {leader}, then {successor})");
        run.operations(150, "after waking the old leader").await;
        round += 1;
    }
    run.finish().await;
}
