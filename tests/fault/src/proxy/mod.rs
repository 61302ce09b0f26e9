//! A fault-injecting TCP proxy for one directed link (node i dialing node
//! j): it listens on a loopback port and forwards each connection to the
//! target, applying the [`Faults`] set through its [`ProxyHandle`] at any
//! moment — to new connections and to those already open. TLS passes
//! through untouched: the proxy only moves bytes.
//!
//! [`Network`] holds the proxies of a whole mesh.

mod link;
mod network;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::error::Error;

pub use network::Network;

/// Which way bytes flow through a proxied connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the dialer to the target (requests).
    Forward,
    /// From the target back to the dialer (responses).
    Backward,
}

/// The faults a link applies; the default passes everything at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Close every connection and refuse new ones (accepted and closed at
    /// once), as a crashed or rebooting peer does.
    pub drop: bool,
    /// Latency added to every chunk of bytes, both ways.
    pub delay: Duration,
    /// Hold the bytes from the dialer to the target: that direction stalls,
    /// as behind a one-way partition (TCP backpressure reaches the sender;
    /// nothing is lost, it flows again when unblocked).
    pub block_forward: bool,
    /// Hold the bytes from the target back to the dialer.
    pub block_backward: bool,
}

impl Faults {
    /// Whether bytes going `direction` are held.
    pub fn blocks(&self, direction: Direction) -> bool {
        match direction {
            Direction::Forward => self.block_forward,
            Direction::Backward => self.block_backward,
        }
    }
}

/// What a proxy has done so far, for tests and reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections accepted and forwarded.
    pub accepted: u64,
    /// Connections refused (closed at once) while dropping.
    pub refused: u64,
    /// Connections open now.
    pub open: u64,
    /// Bytes delivered to the target.
    pub bytes_forward: u64,
    /// Bytes delivered back to dialers.
    pub bytes_backward: u64,
}

/// The live counters behind [`Stats`].
#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicU64,
    refused: AtomicU64,
    open: AtomicU64,
    bytes_forward: AtomicU64,
    bytes_backward: AtomicU64,
}

impl Counters {
    fn bytes(&self, direction: Direction) -> &AtomicU64 {
        match direction {
            Direction::Forward => &self.bytes_forward,
            Direction::Backward => &self.bytes_backward,
        }
    }
}

/// Controls one proxy's faults while it runs; cheap to clone and share.
#[derive(Debug, Clone)]
pub struct ProxyHandle {
    faults: Arc<watch::Sender<Faults>>,
    counters: Arc<Counters>,
}

impl ProxyHandle {
    /// Replaces the faults; open connections follow at once.
    pub fn set(&self, faults: Faults) {
        self.faults.send_replace(faults);
    }

    /// Changes some of the faults, keeping the others.
    pub fn update(&self, change: impl FnOnce(&mut Faults)) {
        self.faults.send_modify(change);
    }

    /// The faults in force.
    pub fn faults(&self) -> Faults {
        *self.faults.borrow()
    }

    /// Passes everything again (no drop, delay or block).
    pub fn pass(&self) {
        self.set(Faults::default());
    }

    /// What the proxy has done so far.
    pub fn stats(&self) -> Stats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let c = &self.counters;
        Stats {
            accepted: load(&c.accepted),
            refused: load(&c.refused),
            open: load(&c.open),
            bytes_forward: load(&c.bytes_forward),
            bytes_backward: load(&c.bytes_backward),
        }
    }
}

/// A running proxy; dropping it closes its listener and every connection.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    target: SocketAddr,
    handle: ProxyHandle,
    task: JoinHandle<()>,
}

impl Proxy {
    /// Starts a proxy to `target` on an ephemeral loopback port.
    pub async fn start(target: SocketAddr) -> Result<Proxy, Error> {
        Proxy::bind(SocketAddr::from(([127, 0, 0, 1], 0)), target).await
    }

    /// Starts a proxy to `target` listening on `listen`.
    pub async fn bind(listen: SocketAddr, target: SocketAddr) -> Result<Proxy, Error> {
        let listener = TcpListener::bind(listen).await.map_err(|source| Error::Bind { addr: listen, source })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind { addr: listen, source })?;
        let (faults, _) = watch::channel(Faults::default());
        let handle = ProxyHandle { faults: Arc::new(faults), counters: Arc::new(Counters::default()) };
        let task = tokio::spawn(serve(listener, target, handle.clone()));
        Ok(Proxy { addr, target, handle, task })
    }

    /// The address to dial instead of the target.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where connections are forwarded.
    pub fn target(&self) -> SocketAddr {
        self.target
    }

    /// The handle that sets this proxy's faults.
    pub fn handle(&self) -> ProxyHandle {
        self.handle.clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every
        // connection task and so closes their sockets.
        self.task.abort();
    }
}

/// Accepts connections until aborted; each runs as a task of a set owned
/// here, so they end with the proxy.
async fn serve(listener: TcpListener, target: SocketAddr, handle: ProxyHandle) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((inbound, _)) => {
                    if handle.faults().drop {
                        handle.counters.refused.fetch_add(1, Ordering::Relaxed);
                        drop(inbound);
                        continue;
                    }
                    handle.counters.accepted.fetch_add(1, Ordering::Relaxed);
                    let faults = handle.faults.subscribe();
                    connections.spawn(link::run(inbound, target, faults, handle.counters.clone()));
                }
                Err(e) => {
                    // Out of descriptors or similar: back off instead of spinning.
                    tracing::warn!("proxy to {target}: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}
