//! The fault-injecting proxy against loopback echo servers: bytes pass,
//! drop closes and refuses, pass restores, delay adds latency, one-way
//! blocks hold bytes until released; and the mesh helpers cut the right
//! links. Every wait polls with a deadline; the only bounded waits that are
//! not polls are the assertions that something does *not* arrive.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fleet_fault::{Error, Faults, Network, Proxy, ProxyHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout, Instant};

/// How long anything that should happen may take.
const DEADLINE: Duration = Duration::from_secs(10);
/// How long something that must not happen is given to (wrongly) happen.
const QUIET: Duration = Duration::from_millis(300);

/// An echo server on a loopback port that prefixes every reply with its
/// name and counts the bytes it received.
struct Echo {
    addr: SocketAddr,
    received: Arc<AtomicU64>,
}

impl Echo {
    async fn start(name: &'static str) -> Echo {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind echo server");
        let addr = listener.local_addr().expect("echo address");
        let received = Arc::new(AtomicU64::new(0));
        let counter = received.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        counter.fetch_add(n as u64, Ordering::SeqCst);
                        let mut reply = name.as_bytes().to_vec();
                        reply.extend_from_slice(&buf[..n]);
                        if stream.write_all(&reply).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Echo { addr, received }
    }

    fn received(&self) -> u64 {
        self.received.load(Ordering::SeqCst)
    }
}

/// Polls `probe` until it holds, or panics after [`DEADLINE`].
async fn eventually<F, Fut>(what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + DEADLINE;
    while !probe().await {
        assert!(Instant::now() < deadline, "timed out after {DEADLINE:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads exactly `len` bytes, or fails (EOF, error, or [`DEADLINE`]).
async fn read_exactly(stream: &mut TcpStream, len: usize) -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; len];
    match timeout(DEADLINE, stream.read_exact(&mut buf)).await {
        Ok(Ok(_)) => Ok(buf),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no reply within {DEADLINE:?}")),
    }
}

/// Sends `message` and returns the reply (server name + message).
async fn roundtrip(stream: &mut TcpStream, name: &str, message: &str) -> Result<String, String> {
    stream.write_all(message.as_bytes()).await.map_err(|e| e.to_string())?;
    let reply = read_exactly(stream, name.len() + message.len()).await?;
    String::from_utf8(reply).map_err(|e| e.to_string())
}

/// Connects to `addr` and completes one exchange, or says why not.
async fn fresh_roundtrip(addr: SocketAddr, name: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    roundtrip(&mut stream, name, "ping").await
}

/// Whether a read on `stream` completes with data within [`QUIET`].
async fn anything_arrives(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    matches!(timeout(QUIET, stream.read(&mut buf)).await, Ok(Ok(n)) if n > 0)
}

/// Whether the peer closed `stream` (EOF or reset) within [`DEADLINE`].
async fn closed(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    let deadline = Instant::now() + DEADLINE;
    loop {
        match timeout(deadline.saturating_duration_since(Instant::now()), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// An echo server "a:", a proxy to it, and a connection through the proxy
/// that has completed one exchange ("one").
async fn connected() -> (Echo, Proxy, ProxyHandle, TcpStream) {
    let echo = Echo::start("a:").await;
    let proxy = Proxy::start(echo.addr).await.expect("start proxy");
    let handle = proxy.handle();
    assert_ne!(proxy.addr(), echo.addr);
    assert_eq!(proxy.target(), echo.addr);
    let mut stream = TcpStream::connect(proxy.addr()).await.expect("connect");
    assert_eq!(roundtrip(&mut stream, "a:", "one").await.as_deref(), Ok("a:one"));
    (echo, proxy, handle, stream)
}

#[tokio::test]
async fn bytes_pass_both_ways_and_are_counted() {
    let (_echo, _proxy, handle, mut stream) = connected().await;
    assert_eq!(roundtrip(&mut stream, "a:", "again").await.as_deref(), Ok("a:again"));
    let stats = handle.stats();
    assert_eq!((stats.accepted, stats.refused, stats.open), (1, 0, 1));
    // Counted just after delivery, so possibly a moment after the reply.
    eventually("8 bytes counted forward and 12 back", || async {
        let stats = handle.stats();
        (stats.bytes_forward, stats.bytes_backward) == (8, 12)
    })
    .await;
    drop(stream);
    eventually("the connection to be closed on both sides", || async { handle.stats().open == 0 }).await;
}

#[tokio::test]
async fn drop_closes_open_connections_refuses_new_ones_and_pass_restores() {
    let (echo, proxy, handle, mut open) = connected().await;

    handle.set(Faults { drop: true, ..Faults::default() });
    assert!(closed(&mut open).await, "an open connection must be closed on drop");
    // New connections are accepted by the kernel but closed at once.
    let refused = fresh_roundtrip(proxy.addr(), "a:").await;
    assert!(refused.is_err(), "a new connection must not get through: {refused:?}");
    assert!(handle.stats().refused >= 1, "{:?}", handle.stats());
    assert_eq!(echo.received(), 3, "nothing reached the server while dropping");

    handle.pass();
    assert_eq!(fresh_roundtrip(proxy.addr(), "a:").await.as_deref(), Ok("a:ping"));
}

#[tokio::test]
async fn delay_adds_latency_to_each_direction() {
    let (_echo, _proxy, handle, mut stream) = connected().await;
    let started = Instant::now();
    assert_eq!(roundtrip(&mut stream, "a:", "fast").await.as_deref(), Ok("a:fast"));
    let undelayed = started.elapsed();

    let delay = Duration::from_millis(150);
    handle.update(|f| f.delay = delay);
    let started = Instant::now();
    assert_eq!(roundtrip(&mut stream, "a:", "slow").await.as_deref(), Ok("a:slow"));
    let delayed = started.elapsed();
    // The request and the reply each wait at least `delay` (a lower bound
    // that timers guarantee, not a stopwatch equality).
    assert!(delayed >= 2 * delay, "round trip took {delayed:?} with {delay:?} each way");
    assert!(delayed > undelayed, "{delayed:?} delayed vs {undelayed:?} without");
}

#[tokio::test]
async fn a_forward_block_holds_requests_until_released() {
    let (echo, _proxy, handle, mut stream) = connected().await;

    handle.update(|f| f.block_forward = true);
    stream.write_all(b"two").await.expect("write while blocked");
    assert!(!anything_arrives(&mut stream).await, "a reply came through a forward block");
    assert_eq!(echo.received(), 3, "the request must be held, not delivered");

    handle.update(|f| f.block_forward = false);
    assert_eq!(read_exactly(&mut stream, 5).await.as_deref(), Ok(&b"a:two"[..]), "held bytes flow again");
    assert_eq!(echo.received(), 6);
}

#[tokio::test]
async fn a_backward_block_delivers_requests_but_holds_replies() {
    let (echo, _proxy, handle, mut stream) = connected().await;

    handle.update(|f| f.block_backward = true);
    stream.write_all(b"two").await.expect("write while blocked");
    eventually("the request to reach the server", || async { echo.received() == 6 }).await;
    assert!(!anything_arrives(&mut stream).await, "the reply came through a backward block");
    assert!(handle.stats().bytes_backward <= 5, "{:?}", handle.stats());

    handle.pass();
    assert_eq!(read_exactly(&mut stream, 5).await.as_deref(), Ok(&b"a:two"[..]));
}

/// Three echo servers ("nodes") and the mesh of proxies between them.
async fn mesh() -> (BTreeMap<u64, Echo>, Network) {
    let mut echoes = BTreeMap::new();
    for (id, name) in [(1, "1:"), (2, "2:"), (3, "3:")] {
        echoes.insert(id, Echo::start(name).await);
    }
    let targets: BTreeMap<u64, SocketAddr> = echoes.iter().map(|(id, e)| (*id, e.addr)).collect();
    let network = Network::start(&targets).await.expect("start network");
    (echoes, network)
}

fn name(id: u64) -> &'static str {
    ["0:", "1:", "2:", "3:"][id as usize]
}

/// Which directed links complete a fresh exchange within [`QUIET`].
async fn working_links(network: &Network) -> Vec<(u64, u64)> {
    let mut working = Vec::new();
    for from in 1..=3 {
        for to in (1..=3).filter(|to| *to != from) {
            let addr = network.addr(from, to).expect("link");
            if let Ok(Ok(_)) = timeout(QUIET, fresh_roundtrip(addr, name(to))).await {
                working.push((from, to));
            }
        }
    }
    working
}

const ALL: [(u64, u64); 6] = [(1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2)];

#[tokio::test]
async fn a_mesh_gives_each_node_its_own_view_and_every_link_works() {
    let (echoes, network) = mesh().await;
    assert_eq!(network.nodes(), vec![1, 2, 3]);
    let peers = network.peers_for(2).expect("peers of node 2");
    let expected = format!(
        "1={},2={},3={}",
        network.addr(2, 1).expect("2->1"),
        echoes[&2].addr,
        network.addr(2, 3).expect("2->3")
    );
    assert_eq!(peers, expected);
    assert_ne!(network.addr(1, 3).expect("1->3"), network.addr(2, 3).expect("2->3"));
    assert_eq!(working_links(&network).await, ALL.to_vec());
    assert!(matches!(network.isolate(7), Err(Error::UnknownLink { .. })));
    assert!(matches!(network.link(1, 1), Err(Error::UnknownLink { .. })));
}

#[tokio::test]
async fn partition_isolate_and_heal() {
    let (_echoes, network) = mesh().await;
    network.partition(&[1], &[2]).expect("partition");
    assert_eq!(working_links(&network).await, vec![(1, 3), (2, 3), (3, 1), (3, 2)]);
    network.heal();
    assert_eq!(working_links(&network).await, ALL.to_vec());

    network.isolate(3).expect("isolate");
    assert_eq!(working_links(&network).await, vec![(1, 2), (2, 1)]);
    network.heal();
    assert_eq!(working_links(&network).await, ALL.to_vec());
}

#[tokio::test]
async fn one_way_loses_only_what_one_node_sends_the_other() {
    let (echoes, network) = mesh().await;
    network.one_way(1, 2).expect("one way");
    // 1 dialing 2: the request never reaches 2.
    let mut one_to_two = TcpStream::connect(network.addr(1, 2).expect("1->2")).await.expect("connect");
    one_to_two.write_all(b"req").await.expect("write");
    // 2 dialing 1: the request reaches 1, its reply never comes back.
    let mut two_to_one = TcpStream::connect(network.addr(2, 1).expect("2->1")).await.expect("connect");
    two_to_one.write_all(b"req").await.expect("write");
    eventually("2's request to reach 1", || async { echoes[&1].received() == 3 }).await;
    assert!(!anything_arrives(&mut two_to_one).await, "1's reply to 2 must be lost");
    assert!(!anything_arrives(&mut one_to_two).await, "1's request to 2 must be lost");
    assert_eq!(echoes[&2].received(), 0);
    assert_eq!(working_links(&network).await, vec![(1, 3), (2, 3), (3, 1), (3, 2)]);

    network.heal();
    assert_eq!(read_exactly(&mut one_to_two, 5).await.as_deref(), Ok(&b"2:req"[..]));
    assert_eq!(read_exactly(&mut two_to_one, 5).await.as_deref(), Ok(&b"1:req"[..]));
}

#[tokio::test]
async fn disconnect_resets_a_node_and_heal_lets_it_reconnect() {
    let (_echoes, network) = mesh().await;
    let mut open = TcpStream::connect(network.addr(3, 1).expect("3->1")).await.expect("connect");
    assert_eq!(roundtrip(&mut open, "1:", "hi").await.as_deref(), Ok("1:hi"));
    network.disconnect(1).expect("disconnect");
    assert!(closed(&mut open).await, "node 1's connections must be closed");
    assert_eq!(working_links(&network).await, vec![(2, 3), (3, 2)]);
    network.heal();
    assert_eq!(working_links(&network).await, ALL.to_vec());
}

#[tokio::test]
async fn dropping_a_proxy_closes_its_connections() {
    let (_echo, proxy, _handle, mut stream) = connected().await;
    let addr = proxy.addr();
    drop(proxy);
    assert!(closed(&mut stream).await, "connections end with their proxy");
    eventually("the listener to go away", || async { TcpStream::connect(addr).await.is_err() }).await;
}
