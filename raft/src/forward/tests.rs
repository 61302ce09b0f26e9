//! Forwarding to the leader against a scripted node: who leads when, what
//! each call answers. Time is paused, so the ten-second deadline costs
//! nothing.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::sync::watch;

use super::*;

/// What the leader's next call answers.
enum Reply {
    Value(u64),
    NotLeader,
    Failed(&'static str),
    Transport(tonic::Code),
    /// Never answers (a partitioned or paused leader).
    Hang,
}

/// A node whose view of the leader and whose calls a test scripts.
struct Scripted {
    id: u64,
    leader: watch::Sender<Option<u64>>,
    replies: Mutex<VecDeque<Reply>>,
    /// Each call made: to which node, by which method.
    calls: Mutex<Vec<(u64, String)>>,
}

impl Scripted {
    fn new(leader: Option<u64>, replies: Vec<Reply>) -> Scripted {
        Scripted {
            id: 1,
            leader: watch::Sender::new(leader),
            replies: Mutex::new(replies.into()),
            calls: Mutex::new(Vec::new()),
        }
    }

    fn calls(&self) -> Vec<(u64, String)> {
        self.calls.lock().unwrap().clone()
    }
}

impl Route for Scripted {
    fn id(&self) -> u64 {
        self.id
    }

    fn leader(&self) -> Option<(u64, String)> {
        (*self.leader.borrow()).map(|l| (l, format!("node-{l}:7000")))
    }

    async fn call<Req, T>(
        &self,
        leader: u64,
        addr: &str,
        method: PeerMethod,
        _request: &Req,
        _timeout: Duration,
    ) -> Result<Result<T, Routed>, tonic::Status>
    where
        Req: Serialize + Sync,
        T: DeserializeOwned + Send,
    {
        assert_eq!(addr, format!("node-{leader}:7000"));
        self.calls.lock().unwrap().push((leader, format!("{method:?}")));
        let reply = self.replies.lock().unwrap().pop_front().unwrap_or(Reply::Hang);
        let value =
            |v: u64| serde_json::from_value(serde_json::json!(v)).map_err(|e| tonic::Status::internal(e.to_string()));
        match reply {
            Reply::Value(v) => Ok(Ok(value(v)?)),
            Reply::NotLeader => Ok(Err(Routed::NotLeader)),
            Reply::Failed(why) => Ok(Err(Routed::Failed(why.to_string()))),
            Reply::Transport(code) => Err(tonic::Status::new(code, "connection refused")),
            Reply::Hang => std::future::pending().await,
        }
    }

    async fn leadership_leaves(&self, leader: u64) -> u64 {
        let mut rx = self.leader.subscribe();
        let successor = rx.wait_for(|l| l.is_some_and(|l| l != leader)).await.ok().and_then(|l| *l);
        match successor {
            Some(successor) => successor,
            None => std::future::pending().await,
        }
    }
}

/// The request as this node would run it if it led: never expected here
/// unless the test says this node leads.
async fn not_here() -> Result<u64, Routed> {
    Err(Routed::Failed("ran locally".into()))
}

#[tokio::test(start_paused = true)]
async fn the_leader_runs_the_request_itself() {
    let node = Scripted::new(Some(1), Vec::new());
    let result = on_leader(&node, PeerMethod::Forward, &(), || async { Ok::<u64, Routed>(42) }).await;
    assert_eq!(result.ok(), Some(42));
    assert!(node.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_follower_sends_the_request_to_the_leader() {
    let node = Scripted::new(Some(2), vec![Reply::Value(7)]);
    let result = on_leader(&node, PeerMethod::Forward, &(), not_here).await;
    assert_eq!(result.ok(), Some(7));
    assert_eq!(node.calls(), [(2, "Forward".to_string())]);
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_leader_or_a_former_one_is_tried_again() {
    let replies = vec![Reply::Transport(tonic::Code::Unavailable), Reply::NotLeader, Reply::Value(5)];
    let node = Scripted::new(Some(2), replies);
    let started = Instant::now();
    let result = on_leader(&node, PeerMethod::Forward, &(), not_here).await;
    assert_eq!(result.ok(), Some(5));
    assert_eq!(node.calls().len(), 3);
    assert_eq!(started.elapsed(), RETRY_PAUSE * 2, "one pause between attempts");
}

#[tokio::test(start_paused = true)]
async fn a_failure_on_the_leader_or_a_broken_call_is_not_tried_again() {
    let node = Scripted::new(Some(2), vec![Reply::Failed("node 2 refused")]);
    let result = on_leader(&node, PeerMethod::Forward, &(), not_here).await;
    assert!(matches!(result, Err(Error::Raft(why)) if why == "node 2 refused"));
    assert_eq!(node.calls().len(), 1);

    // Sent, and not known to have failed before the leader got it.
    let node = Scripted::new(Some(2), vec![Reply::Transport(tonic::Code::DeadlineExceeded)]);
    let result = on_leader(&node, PeerMethod::Forward, &(), not_here).await;
    assert!(matches!(result, Err(Error::Unreachable { peer: 2, .. })));
    assert_eq!(node.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn no_leader_until_the_deadline_reports_the_last_problem() {
    let node = Scripted::new(None, Vec::new());
    let started = Instant::now();
    let result = on_leader(&node, PeerMethod::Forward, &(), not_here).await;
    assert!(matches!(result, Err(Error::NoLeader(why)) if why == "no leader elected yet"));
    assert!(started.elapsed() >= WRITE_DEADLINE && started.elapsed() < WRITE_DEADLINE + RETRY_PAUSE * 2);

    let unreachable = (0..1000).map(|_| Reply::Transport(tonic::Code::Unavailable)).collect();
    let node = Scripted::new(Some(3), unreachable);
    let result = on_leader(&node, PeerMethod::Forward, &(), not_here).await;
    let Err(Error::NoLeader(why)) = result else { panic!("not NoLeader: {result:?}") };
    assert_eq!(why, "leader 3 at node-3:7000 unreachable: connection refused");
}

#[tokio::test(start_paused = true)]
async fn a_write_held_by_a_leader_that_lost_leadership_has_an_unknown_outcome() {
    let node = Scripted::new(Some(2), vec![Reply::Hang]);
    let elect = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        node.leader.send_replace(Some(3));
        std::future::pending::<()>().await;
    };
    let result = tokio::select! {
        r = on_leader(&node, PeerMethod::Forward, &(), not_here) => r,
        _ = elect => unreachable!(),
    };
    let Err(Error::Unreachable { peer: 2, detail }) = result else { panic!("not Unreachable: {result:?}") };
    assert!(detail.contains("moved to node 3") && detail.contains("outcome is unknown"), "{detail}");
    assert_eq!(node.calls().len(), 1, "a write is never sent twice");
}

#[tokio::test(start_paused = true)]
async fn a_read_held_by_a_leader_that_lost_leadership_goes_to_the_new_one_at_once() {
    let node = Scripted::new(Some(2), vec![Reply::Hang, Reply::Value(9)]);
    let started = Instant::now();
    let elect = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        node.leader.send_replace(Some(3));
        std::future::pending::<()>().await;
    };
    let result = tokio::select! {
        r = on_leader(&node, PeerMethod::ReadIndex, &(), not_here) => r,
        _ = elect => unreachable!(),
    };
    assert_eq!(result.ok(), Some(9));
    assert_eq!(node.calls(), [(2, "ReadIndex".to_string()), (3, "ReadIndex".to_string())]);
    assert_eq!(started.elapsed(), Duration::from_secs(1), "no pause before asking the new leader");
}

#[tokio::test(start_paused = true)]
async fn leadership_that_moves_away_from_this_node_is_followed() {
    let node = Scripted::new(Some(1), vec![Reply::Value(11)]);
    let local = || async {
        node.leader.send_replace(Some(2));
        Err::<u64, Routed>(Routed::NotLeader)
    };
    let result = on_leader(&node, PeerMethod::Forward, &(), local).await;
    assert_eq!(result.ok(), Some(11));
    assert_eq!(node.calls(), [(2, "Forward".to_string())]);
}
