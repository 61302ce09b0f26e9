//! The frame every fault test shares: a trio whose peer links run through
//! proxies, concurrent recording clients on a few ConfigMaps through random
//! nodes, two watchers, and — once the test has injected its faults — the
//! checks: a consistent read of every key (so every acknowledged write
//! must show in the history the checker accepts), linearizability (also
//! once unanswered writes are settled from what a watcher saw), monotonic
//! reads, read-your-writes, each watch stream against the other, and every
//! replica's state digest identical at the same applied index.
//!
//! Phases end on counts of completed operations or on leadership observed,
//! with deadlines, never on a fixed sleep. `FAULT_SOAK_SECONDS=N` makes a
//! test repeat its fault (and random others) for N seconds before the
//! checks.
//!
//! Needs the binaries: `cargo build --bins` first.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_fault::monotonic::{monotonic_reads, read_your_writes};
use fleet_fault::resolve::resolve;
use fleet_fault::watch::{watch_stream_check, Change, EventKind, WatchStream};
use fleet_fault::watcher::{Moves, Watched, Watcher};
use fleet_fault::{check_linearizable, Client, History, Limits, Network, Outcome, Recorder, Report, Response};
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_tests::hub::admin_client;
use fleet_tests::{eventually, Hub, HubOptions};
use tokio::task::JoinHandle;
use tonic::transport::Channel;

const KEYS: [&str; 3] = ["k0", "k1", "k2"];
const CLIENTS: u64 = 4;
const NAMESPACE: &str = "fault";
/// After this, an unanswered operation is recorded as indeterminate.
const OP_TIMEOUT: Duration = Duration::from_secs(2);
/// A client's pause after an operation without an answer, so a hub that is
/// down does not fill the history with thousands of indeterminate writes.
const BACKOFF: Duration = Duration::from_millis(25);

/// What a fault test measured, printed and checked at its end.
#[derive(Debug, Clone)]
pub struct Figures {
    /// The test's name.
    pub name: String,
    /// Faults injected (kills, signals, partitions; a heal is not counted).
    pub faults: u64,
    /// The same, by kind.
    pub by_kind: BTreeMap<&'static str, u64>,
    /// After each fault that cost the hub its leader: the time from the
    /// fault to the first acknowledged write invoked after it.
    pub after_leader_loss: Vec<Duration>,
    /// Operations in the history / constraining the check.
    pub ops: usize,
    /// Operations the checker placed.
    pub checked: usize,
    /// Operations without an answer.
    pub unknown: u64,
    /// Violations found (the test fails unless zero).
    pub violations: usize,
    /// The longest time without any acknowledged write while clients ran.
    pub longest_unavailable: Duration,
    /// The applied index every replica agreed on, and its digest.
    pub agreed: (u64, String),
    /// Wall time of the test.
    pub elapsed: Duration,
}

/// A running fault test.
pub struct Scenario {
    /// The hub under test.
    pub hub: Hub,
    /// The proxies on its peer links.
    pub network: Network,
    name: String,
    started: Instant,
    recorder: Arc<Recorder>,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    clients: Vec<JoinHandle<u64>>,
    watchers: Option<(Watcher, Watcher, u64)>,
    barrier: Client,
    faults: BTreeMap<&'static str, u64>,
    /// When (recorder time) each fault that cost the hub its leader began.
    leader_losses: Vec<u64>,
}

/// Admin clients of `ids`.
fn connect(hub: &Hub, ids: &[u64]) -> Vec<FleetClient<Channel>> {
    ids.iter().map(|id| admin_client(&hub.endpoint(*id), &hub.pki_dir())).collect()
}

impl Scenario {
    /// Starts a trio behind proxies with `options`, the watchers (unless
    /// `watch` is false: a test that restarts every node loses the watch
    /// history they resume from), a barrier write they see, and the clients.
    /// `pinned` picks the node the pinned watcher stays on from the leader.
    pub async fn start(name: &str, options: HubOptions, watch: bool, pinned: impl Fn(u64) -> u64) -> Scenario {
        let started = Instant::now();
        let mut hub = Hub::prepare(options);
        let targets: BTreeMap<u64, SocketAddr> =
            (1..=3).map(|id| (id, hub.endpoint(id).parse().expect("a node address"))).collect();
        let network = Network::start(&targets).await.expect("proxies between the nodes");
        for id in 1..=3 {
            hub.set_node_args(id, vec!["--peer-dial".into(), network.peers_for(id).expect("peers")]);
        }
        hub.launch().await;
        let leader = hub.wait_leader().await;

        let recorder = Arc::new(Recorder::new());
        let watchers = watch.then(|| {
            let on = pinned(leader);
            // It stays on `on` through breaks, and moves on only if that
            // node restarted and cannot resume (see the watcher's doc).
            let order: Vec<u64> = (0..3).map(|i| (on - 1 + i) % 3 + 1).collect();
            let pinned = Watcher::spawn(
                connect(&hub, &order),
                NAMESPACE,
                recorder.clone(),
                Duration::from_secs(30),
                Moves::OnlyWhenExpired,
            );
            let roaming = Watcher::spawn(
                connect(&hub, &[1, 2, 3]),
                NAMESPACE,
                recorder.clone(),
                Duration::from_secs(1),
                Moves::OnAnyBreak,
            );
            (pinned, roaming, on)
        });
        let mut barrier = Client::new(0, NAMESPACE, connect(&hub, &[1, 2, 3]), Arc::new(Recorder::new()), OP_TIMEOUT)
            .expect("client");
        let first = barrier_write(&mut barrier).await;
        if let Some((pinned, roaming, _)) = &watchers {
            eventually("the watchers to follow", Duration::from_secs(30), || async {
                let seen = (pinned.seen(), roaming.seen());
                if seen.0 >= first && seen.1 >= first {
                    Ok(())
                } else {
                    Err(format!("seen {seen:?} of {first}"))
                }
            })
            .await;
        }

        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let mut clients = Vec::new();
        for process in 1..=CLIENTS {
            let mut client = Client::new(process, NAMESPACE, connect(&hub, &[1, 2, 3]), recorder.clone(), OP_TIMEOUT)
                .expect("client");
            let (stop, done) = (stop.clone(), done.clone());
            clients.push(tokio::spawn(async move {
                let mut unknown = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    if client.random_op(&KEYS).await == Outcome::Unknown {
                        unknown += 1;
                        tokio::time::sleep(BACKOFF).await;
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                }
                unknown
            }));
        }
        Scenario {
            hub,
            network,
            name: name.to_string(),
            started,
            recorder,
            stop,
            done,
            clients,
            watchers,
            barrier,
            faults: BTreeMap::new(),
            leader_losses: Vec::new(),
        }
    }

    /// Counts one injected fault of `kind` that leaves the leader in place.
    pub fn fault(&mut self, kind: &'static str) {
        *self.faults.entry(kind).or_default() += 1;
    }

    /// Counts one injected fault of `kind` that costs the hub its leader,
    /// and notes when, to measure how long writes were unavailable.
    pub fn leader_lost(&mut self, kind: &'static str) {
        self.fault(kind);
        self.leader_losses.push(self.recorder.now());
    }

    /// Waits until the clients have completed `more` operations.
    pub async fn operations(&self, more: u64, phase: &str) {
        let done = &self.done;
        let target = done.load(Ordering::SeqCst) + more;
        eventually(&format!("{more} operations {phase}"), Duration::from_secs(60), || async {
            let now = done.load(Ordering::SeqCst);
            if now >= target {
                Ok(())
            } else {
                Err(format!("{now} of {target}"))
            }
        })
        .await;
    }

    /// Waits until every node other than `old` that runs agrees on a leader
    /// other than `old`; returns it.
    pub async fn new_leader_without(&self, old: u64) -> u64 {
        let others: Vec<u64> = self.hub.running().into_iter().filter(|id| *id != old).collect();
        eventually("a new leader without the old one", Duration::from_secs(60), || async {
            let mut seen = Vec::new();
            for id in &others {
                seen.push(self.hub.status(*id).await?.leader);
            }
            match seen.first() {
                Some(&l) if l != 0 && l != old && seen.iter().all(|x| *x == l) => Ok(l),
                _ => Err(format!("leaders seen by {others:?}: {seen:?}")),
            }
        })
        .await
    }

    /// Whether to run fault round `round` (counting from 0): the first
    /// always; more only in soak mode (`FAULT_SOAK_SECONDS=N`), until N
    /// seconds have passed since the test started.
    pub fn another_round(&self, round: u64) -> bool {
        let soak = std::env::var("FAULT_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).map(Duration::from_secs);
        round == 0 || soak.is_some_and(|d| self.started.elapsed() < d)
    }

    /// Stops the clients, reads every key consistently, lets the watchers
    /// reach a final barrier, runs every check and compares the replicas'
    /// digests; prints the figures and returns them.
    pub async fn finish(mut self) -> Figures {
        self.stop.store(true, Ordering::SeqCst);
        let mut unknown = 0;
        for client in std::mem::take(&mut self.clients) {
            unknown += client.await.expect("client task");
        }
        let mut last_reader =
            Client::new(CLIENTS + 1, NAMESPACE, connect(&self.hub, &[1, 2, 3]), self.recorder.clone(), OP_TIMEOUT)
                .expect("client");
        for key in KEYS {
            final_read(&mut last_reader, key).await;
        }
        let end = barrier_write(&mut self.barrier).await;

        let mut history = self.recorder.history();
        let longest_unavailable = longest_without_writes(&history);
        let after_leader_loss = unavailable_after(&history, &self.leader_losses);
        let checking = Instant::now();
        let report = check_linearizable(&history, Limits::default()).expect("a well-formed history");
        print_checker(&self.name, "as recorded", &report, checking.elapsed());
        let mut problems: Vec<String> = Vec::new();
        if !report.is_linearizable() {
            problems.push(format!("not linearizable: {report}"));
            keep_history(&self.name, "as-recorded", &history);
        }
        let regressions = monotonic_reads(&history);
        if !regressions.is_empty() {
            problems.push(format!("reads went back in time: {regressions:?}"));
        }
        let regressions = read_your_writes(&history);
        if !regressions.is_empty() {
            problems.push(format!("a client read older than its own write: {regressions:?}"));
        }
        if let Some((pinned, roaming, on)) = self.watchers.take() {
            let pinned =
                pinned.finish(end, Duration::from_secs(60)).await.expect("the pinned watcher to reach the end");
            let roaming =
                roaming.finish(end, Duration::from_secs(60)).await.expect("the roaming watcher to reach the end");
            if !(pinned.complete && roaming.complete) {
                problems.push("a watch expired: the record of commits is incomplete".into());
            }
            let found = watch_stream_check(&roaming.stream, &changes(&pinned));
            if !found.is_empty() {
                problems.push(format!("the roaming watch against the pinned one: {found:?}"));
            }
            let found = watch_stream_check(&pinned.stream, &changes(&roaming));
            if !found.is_empty() {
                problems.push(format!("the pinned watch against the roaming one: {found:?}"));
            }
            let settled = resolve(&mut history, &roaming.committed);
            let checking = Instant::now();
            let settled_report = check_linearizable(&history, Limits::default()).expect("a well-formed history");
            print_checker(&self.name, "settled", &settled_report, checking.elapsed());
            if !settled_report.is_linearizable() {
                problems.push(format!("not linearizable once settled ({settled:?}): {settled_report}"));
                keep_history(&self.name, "settled", &history);
            }
            println!(
                "{}: {} changes watched from node {on} ({} moves past an expired node), {} by the roaming watcher ({} reconnections); settled {settled:?}",
                self.name,
                pinned.committed.len(),
                pinned.moved_on_expiry,
                roaming.committed.len(),
                roaming.reconnects
            );
        }
        let agreed = self.hub.replicas_agree().await;
        let figures = Figures {
            name: self.name.clone(),
            faults: self.faults.values().sum(),
            by_kind: self.faults.clone(),
            after_leader_loss,
            ops: history.ops.len(),
            checked: report.ops_checked(),
            unknown,
            violations: problems.len(),
            longest_unavailable,
            agreed,
            elapsed: self.started.elapsed(),
        };
        println!(
            "FIGURES {}: faults {}, operations {} ({} checked, {} without an answer), violations {}, longest \
             unavailability {:.2} s, replicas agree at index {} ({}), {:.1} s; {report}",
            figures.name,
            figures.faults,
            figures.ops,
            figures.checked,
            figures.unknown,
            figures.violations,
            figures.longest_unavailable.as_secs_f64(),
            figures.agreed.0,
            &figures.agreed.1[..19.min(figures.agreed.1.len())],
            figures.elapsed.as_secs_f64(),
        );
        println!(
            "FIGURES {}: faults by kind {:?}; unavailability after a leader loss {}",
            figures.name,
            figures.by_kind,
            distribution(&figures.after_leader_loss)
        );
        println!(
            "SAMPLES {}: unavailability after a leader loss (s): {}",
            figures.name,
            figures.after_leader_loss.iter().map(|d| format!("{:.3}", d.as_secs_f64())).collect::<Vec<_>>().join(" ")
        );
        assert!(problems.is_empty(), "{}: violations:\n{}", self.name, problems.join("\n"));
        assert!(figures.checked >= 200, "{}: too few operations constrained the check: {report}", self.name);
        figures
    }
}

/// Writes a history the checker refused to `target/fault-histories/` (one
/// operation per line, `Debug` form) so it can be checked again by hand,
/// and says where.
fn keep_history(name: &str, which: &str, history: &History) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fault-histories");
    let file = dir.join(format!("{}-{which}.txt", name.replace(' ', "-")));
    let text: String = history.ops.iter().map(|op| format!("{op:?}\n")).collect();
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, text)) {
        Ok(()) => println!("{name}: history kept in {}", file.display()),
        Err(e) => println!("{name}: could not keep the history in {}: {e}", file.display()),
    }
}

/// Prints what the linearizability checker did with a history (a figure
/// for the README, never asserted).
fn print_checker(name: &str, which: &str, report: &Report, took: Duration) {
    let windows: usize = report.keys.iter().map(|k| k.windows).sum();
    let most = report.keys.iter().map(|k| k.ops).max().unwrap_or(0);
    println!(
        "CHECKER {name} ({which}): {} keys, {} operations checked (at most {most} on a key), {windows} windows, \
         {} steps, {} undecided, {:.2} s",
        report.keys.len(),
        report.ops_checked(),
        report.steps(),
        report.undecided().len(),
        took.as_secs_f64()
    );
}

/// The longest time between two acknowledged writes (from the first
/// operation's invocation to the last one's answer).
fn longest_without_writes(history: &History) -> Duration {
    let mut times: Vec<u64> = history
        .ops
        .iter()
        .filter(|op| op.command.is_write() && matches!(op.outcome, Outcome::Ok(_)))
        .filter_map(|op| op.complete)
        .collect();
    let start = history.ops.iter().map(|op| op.invoke).min().unwrap_or(0);
    let end = history.ops.iter().filter_map(|op| op.complete).max().unwrap_or(start);
    times.push(start);
    times.push(end);
    times.sort_unstable();
    let gap = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    Duration::from_nanos(gap)
}

/// For each time in `losses`: how long until the first acknowledged write
/// invoked at or after it was answered (a write invoked before the fault
/// may have been acknowledged by the old leader, so it does not count).
/// A loss with no such write before the history ends counts until its end.
fn unavailable_after(history: &History, losses: &[u64]) -> Vec<Duration> {
    let mut writes: Vec<(u64, u64)> = history
        .ops
        .iter()
        .filter(|op| op.command.is_write() && matches!(op.outcome, Outcome::Ok(_)))
        .filter_map(|op| op.complete.map(|c| (op.invoke, c)))
        .collect();
    writes.sort_unstable();
    let end = history.ops.iter().filter_map(|op| op.complete).max().unwrap_or(0);
    losses
        .iter()
        .map(|&at| {
            let first = writes.iter().filter(|(invoke, _)| *invoke >= at).map(|(_, c)| *c).min().unwrap_or(end);
            Duration::from_nanos(first.saturating_sub(at))
        })
        .collect()
}

/// `p50 …, p99 …, max … (n samples)` of `samples`, nearest-rank.
pub fn distribution(samples: &[Duration]) -> String {
    if samples.is_empty() {
        return "none (no leader lost)".into();
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = |p: f64| sorted[((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
    format!(
        "p50 {:.2} s, p99 {:.2} s, max {:.2} s ({} samples)",
        rank(0.50).as_secs_f64(),
        rank(0.99).as_secs_f64(),
        sorted[sorted.len() - 1].as_secs_f64(),
        sorted.len()
    )
}

/// A consistent read of `key`, retried until it has a definite answer.
async fn final_read(client: &mut Client, key: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if client.read(key, true).await != Outcome::Unknown {
            return;
        }
        assert!(Instant::now() < deadline, "no consistent read of {key} within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes the `barrier` key until a write is acknowledged; its version.
async fn barrier_write(client: &mut Client) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match client.write("barrier", None).await {
            Outcome::Ok(Response::Written { rv }) => return rv,
            other => assert!(Instant::now() < deadline, "no barrier write within 30 s: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The changes a watcher saw, as the reference for another stream.
fn changes(watched: &Watched) -> Vec<Change> {
    let WatchStream { events, .. } = &watched.stream;
    events.iter().map(|e| Change { rv: e.rv, key: e.key.clone(), deleted: e.kind == EventKind::Deleted }).collect()
}
