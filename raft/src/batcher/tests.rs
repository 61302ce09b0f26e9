//! Group commit without Raft: a scripted [`Propose`] stands in for
//! consensus, so merging, answering, rerouting and the in-flight limits are
//! checked in milliseconds.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use fleet_statemachine::{Command, StoreError};
use tokio::sync::Semaphore;

use super::*;

/// How the fake leader answers its next `write_on_leader`.
enum Script {
    /// One answer per command (each names its command).
    Answer,
    NotLeader,
    Failed(&'static str),
    /// One answer too few.
    Short,
}

/// Consensus as the batcher sees it, recording what it was asked to commit.
struct Fake {
    leads: AtomicBool,
    on_leader: Mutex<VecDeque<Script>>,
    /// What `write_anywhere` answers: `None` echoes, `Some` fails with it.
    anywhere_error: Mutex<Option<Error>>,
    /// Each proposal: which path and the names of its commands.
    proposals: Mutex<Vec<(&'static str, Vec<String>)>>,
    /// Proposals wait here until a test lets them through.
    gate: Semaphore,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

impl Fake {
    fn new(leads: bool) -> Arc<Fake> {
        Arc::new(Fake {
            leads: AtomicBool::new(leads),
            on_leader: Mutex::new(VecDeque::new()),
            anywhere_error: Mutex::new(None),
            proposals: Mutex::new(Vec::new()),
            gate: Semaphore::new(Semaphore::MAX_PERMITS),
            in_flight: AtomicUsize::new(0),
            most_in_flight: AtomicUsize::new(0),
        })
    }

    fn gated(leads: bool) -> Arc<Fake> {
        let fake = Fake::new(leads);
        fake.gate.forget_permits(Semaphore::MAX_PERMITS);
        fake
    }

    fn script(&self, step: Script) {
        self.on_leader.lock().unwrap().push_back(step);
    }

    fn proposals(&self) -> Vec<(&'static str, Vec<String>)> {
        self.proposals.lock().unwrap().clone()
    }

    async fn enter(&self, path: &'static str, proposal: &Proposal) {
        self.proposals.lock().unwrap().push((path, names(proposal)));
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        if let Ok(permit) = self.gate.acquire().await {
            permit.forget();
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Propose for Fake {
    fn leads(&self) -> bool {
        self.leads.load(Ordering::SeqCst)
    }

    async fn write_on_leader(&self, proposal: Proposal) -> Result<Vec<Response>, Routed> {
        self.enter("leader", &proposal).await;
        let step = self.on_leader.lock().unwrap().pop_front().unwrap_or(Script::Answer);
        match step {
            Script::Answer => Ok(echo(&proposal)),
            Script::NotLeader => Err(Routed::NotLeader),
            Script::Failed(why) => Err(Routed::Failed(why.to_string())),
            Script::Short => Ok(echo(&proposal).into_iter().skip(1).collect()),
        }
    }

    async fn write_anywhere(&self, proposal: Proposal) -> Result<Vec<Response>, Error> {
        self.enter("anywhere", &proposal).await;
        match self.anywhere_error.lock().unwrap().take() {
            Some(e) => Err(e),
            None => Ok(echo(&proposal)),
        }
    }
}

fn command(name: &str) -> Command {
    Command { now: name.to_string(), ops: Vec::new() }
}

fn names(proposal: &Proposal) -> Vec<String> {
    proposal.commands().unwrap_or_default().iter().map(|c| c.now.clone()).collect()
}

/// An answer per command that says which command it answers.
fn echo(proposal: &Proposal) -> Vec<Response> {
    names(proposal).into_iter().map(|n| Response::Refused { index: 1, error: StoreError::Invalid(n) }).collect()
}

fn answered(response: &Response) -> String {
    match response {
        Response::Refused { error: StoreError::Invalid(name), .. } => name.clone(),
        other => format!("{other:?}"),
    }
}

type OneAnswer = oneshot::Receiver<Result<Response, Error>>;
type BatchAnswer = oneshot::Receiver<Result<Vec<Response>, Routed>>;

fn one(name: &str) -> (Pending, OneAnswer) {
    let (tx, rx) = oneshot::channel();
    let encoded = EncodedCommand::new(command(name)).unwrap();
    (Pending::one(encoded, tx), rx)
}

fn forwarded(names: &[&str]) -> (Pending, BatchAnswer) {
    let (tx, rx) = oneshot::channel();
    let proposal = Proposal::new(names.iter().map(|n| command(n)).collect()).unwrap();
    (Pending::forwarded(proposal, tx), rx)
}

async fn one_answer(rx: OneAnswer) -> Result<String, String> {
    rx.await.unwrap().map(|r| answered(&r)).map_err(|e| format!("{e:?}"))
}

async fn batch_answer(rx: BatchAnswer) -> Result<Vec<String>, Routed> {
    rx.await.unwrap().map(|rs| rs.iter().map(answered).collect())
}

/// Queues `items` first, then starts the batcher, so they are all waiting
/// when it looks (one batch, whatever the scheduling).
async fn start(fake: &Arc<Fake>, items: Vec<Pending>) -> mpsc::Sender<Pending> {
    let (tx, rx) = mpsc::channel(QUEUE);
    for item in items {
        assert!(tx.send(item).await.is_ok());
    }
    tokio::spawn(run(Arc::downgrade(fake), rx));
    tx
}

/// Lets every task that can run, run (time is paused: this advances no
/// clock a test depends on).
async fn settle_tasks() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[test]
fn fill_holds_back_what_would_cross_the_command_limit() {
    let (tx, mut rx) = mpsc::channel(QUEUE);
    let mut answers = Vec::new();
    for i in 0..MAX_COMMANDS {
        let (item, answer) = one(&format!("c{i}"));
        answers.push(answer);
        assert!(tx.try_send(item).is_ok());
    }
    let (first, _first_answer) = one("first");
    let (batch, next) = fill(first, &mut rx);
    assert_eq!(batch.len(), MAX_COMMANDS, "the first and all but one queued");
    assert!(next.is_some_and(|n| n.part.commands() == 1));
    assert!(rx.try_recv().is_err(), "nothing left behind in the queue");

    let (big, _a) = forwarded(&vec!["f"; MAX_COMMANDS - 1]);
    let (two, _b) = forwarded(&["x", "y"]);
    assert!(tx.try_send(two).is_ok());
    let (batch, next) = fill(big, &mut rx);
    assert_eq!((batch.len(), next.map(|n| n.part.commands())), (1, Some(2)));
}

#[test]
fn fill_holds_back_what_would_cross_the_byte_limit() {
    let (tx, mut rx) = mpsc::channel(QUEUE);
    let large = "x".repeat(MAX_BYTES * 2 / 5);
    for _ in 0..3 {
        let (item, _answer) = one(&large);
        assert!(tx.try_send(item).is_ok());
    }
    let (first, _answer) = one("small");
    let (batch, next) = fill(first, &mut rx);
    assert_eq!(batch.len(), 3, "the small one and two large ones fit, the third does not");
    assert!(next.is_some());

    // An item larger than the limit on its own still goes, alone.
    let (huge, _answer) = one(&"x".repeat(MAX_BYTES + 1));
    let (after, _answer) = one("after");
    assert!(tx.try_send(after).is_ok());
    let (batch, next) = fill(huge, &mut rx);
    assert_eq!((batch.len(), next.is_some()), (1, true));
}

#[tokio::test(start_paused = true)]
async fn queued_writes_share_one_entry_and_each_gets_its_own_answer() {
    let fake = Fake::new(true);
    let (a, a_rx) = one("a");
    let (b, b_rx) = one("b");
    let (c, c_rx) = one("c");
    let _tx = start(&fake, vec![a, b, c]).await;
    assert_eq!(one_answer(a_rx).await, Ok("a".into()));
    assert_eq!(one_answer(b_rx).await, Ok("b".into()));
    assert_eq!(one_answer(c_rx).await, Ok("c".into()));
    assert_eq!(fake.proposals(), [("anywhere", vec!["a".to_string(), "b".into(), "c".into()])]);
}

#[tokio::test(start_paused = true)]
async fn the_leader_merges_forwarded_batches_with_its_own_writes_in_order() {
    let fake = Fake::new(true);
    let (a, a_rx) = one("a");
    let (bc, bc_rx) = forwarded(&["b", "c"]);
    let (d, d_rx) = one("d");
    let _tx = start(&fake, vec![a, bc, d]).await;
    assert_eq!(one_answer(a_rx).await, Ok("a".into()));
    assert_eq!(batch_answer(bc_rx).await.ok(), Some(vec!["b".to_string(), "c".into()]));
    assert_eq!(one_answer(d_rx).await, Ok("d".into()));
    // Proposed here only, never forwarded on: the follower finds the leader itself.
    assert_eq!(fake.proposals(), [("leader", vec!["a".to_string(), "b".into(), "c".into(), "d".into()])]);
}

#[tokio::test(start_paused = true)]
async fn a_follower_sends_forwarded_batches_back_and_its_own_writes_to_the_leader() {
    let fake = Fake::new(false);
    let (a, a_rx) = one("a");
    let (b, b_rx) = forwarded(&["b"]);
    let _tx = start(&fake, vec![a, b]).await;
    assert!(matches!(batch_answer(b_rx).await, Err(Routed::NotLeader)));
    assert_eq!(one_answer(a_rx).await, Ok("a".into()));
    assert_eq!(fake.proposals(), [("anywhere", vec!["a".to_string()])]);
}

#[tokio::test(start_paused = true)]
async fn leadership_lost_before_the_append_reroutes_only_this_nodes_writes() {
    let fake = Fake::new(true);
    fake.script(Script::NotLeader);
    let (a, a_rx) = one("a");
    let (bc, bc_rx) = forwarded(&["b", "c"]);
    let (d, d_rx) = one("d");
    let _tx = start(&fake, vec![a, bc, d]).await;
    assert!(matches!(batch_answer(bc_rx).await, Err(Routed::NotLeader)));
    assert_eq!(one_answer(a_rx).await, Ok("a".into()));
    assert_eq!(one_answer(d_rx).await, Ok("d".into()));
    let all = vec!["a".to_string(), "b".into(), "c".into(), "d".into()];
    assert_eq!(fake.proposals(), [("leader", all), ("anywhere", vec!["a".to_string(), "d".into()])]);
}

#[tokio::test(start_paused = true)]
async fn a_failed_entry_fails_every_writer_of_it() {
    let fake = Fake::new(true);
    fake.script(Script::Failed("disk full"));
    let (a, a_rx) = one("a");
    let (b, b_rx) = forwarded(&["b"]);
    let _tx = start(&fake, vec![a, b]).await;
    assert!(matches!(batch_answer(b_rx).await, Err(Routed::Failed(why)) if why.contains("disk full")));
    assert!(matches!(a_rx.await, Ok(Err(Error::Raft(why))) if why.contains("disk full")));

    // Without a forwarded batch the error keeps its kind for every writer.
    let fake = Fake::new(false);
    *fake.anywhere_error.lock().unwrap() = Some(Error::NoLeader("none elected".into()));
    let (a, a_rx) = one("a");
    let (b, b_rx) = one("b");
    let _tx = start(&fake, vec![a, b]).await;
    assert!(matches!(a_rx.await, Ok(Err(Error::NoLeader(m))) if m == "none elected"));
    assert!(matches!(b_rx.await, Ok(Err(Error::NoLeader(m))) if m == "none elected"));
}

#[tokio::test(start_paused = true)]
async fn answers_that_do_not_match_the_commands_fail_the_batch() {
    let fake = Fake::new(true);
    fake.script(Script::Short);
    let (a, a_rx) = one("a");
    let (b, b_rx) = forwarded(&["b", "c"]);
    let _tx = start(&fake, vec![a, b]).await;
    assert!(matches!(batch_answer(b_rx).await, Err(Routed::Failed(why)) if why.contains("2 answers for 3 commands")));
    assert!(matches!(a_rx.await, Ok(Err(Error::Raft(why))) if why.contains("2 answers for 3 commands")));
}

#[tokio::test(start_paused = true)]
async fn the_leader_keeps_two_batches_in_flight_a_follower_one() {
    // The follower's second and third writes wait together and share one
    // entry: while one batch commits, the next fills up.
    for (leads, most, entries) in [(true, 2, 3), (false, 1, 2)] {
        let fake = Fake::gated(leads);
        let tx = start(&fake, Vec::new()).await;
        let mut answers = Vec::new();
        // Each write arrives after the batch before it left: one batch each.
        for name in ["a", "b", "c"] {
            let (item, answer) = one(name);
            assert!(tx.send(item).await.is_ok());
            answers.push(answer);
            settle_tasks().await;
        }
        assert_eq!(fake.most_in_flight.load(Ordering::SeqCst), most, "leads: {leads}");
        fake.gate.add_permits(3);
        for (answer, name) in answers.into_iter().zip(["a", "b", "c"]) {
            assert_eq!(one_answer(answer).await, Ok(name.to_string()));
        }
        assert_eq!(fake.proposals().len(), entries, "leads: {leads}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_batcher_stops_with_its_queue_or_its_consensus() {
    let fake = Fake::new(true);
    let (tx, rx) = mpsc::channel(QUEUE);
    let task = tokio::spawn(run(Arc::downgrade(&fake), rx));
    drop(tx);
    assert!(task.await.is_ok());

    let fake = Fake::new(true);
    let (tx, rx) = mpsc::channel(QUEUE);
    let task = tokio::spawn(run(Arc::downgrade(&fake), rx));
    drop(fake);
    let (a, a_rx) = one("a");
    assert!(tx.send(a).await.is_ok());
    assert!(task.await.is_ok());
    assert!(a_rx.await.is_err(), "the write is dropped, which its writer reads as shutting down");
}
