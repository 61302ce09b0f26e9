//! One proxied connection: dial the target, then move bytes both ways,
//! each direction obeying the link's faults as they change.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::{Counters, Direction, Faults};

/// Bytes read at once.
const CHUNK: usize = 16 * 1024;
/// Chunks in flight per direction (delayed or held) before the reader
/// stops and TCP backpressure reaches the sender.
const IN_FLIGHT: usize = 64;

/// Counts an open connection for as long as it lives.
struct Open(Arc<Counters>);

impl Open {
    fn new(counters: Arc<Counters>) -> Open {
        counters.open.fetch_add(1, Ordering::Relaxed);
        Open(counters)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Resolves once the link is set to drop connections (or its controls are
/// gone, which means the proxy is going away).
async fn dropped(mut faults: watch::Receiver<Faults>) {
    let _ = faults.wait_for(|f| f.drop).await;
}

/// Waits until `direction` is not blocked; false if the controls are gone.
async fn open_way(faults: &mut watch::Receiver<Faults>, direction: Direction) -> bool {
    faults.wait_for(|f| !f.blocks(direction)).await.is_ok()
}

/// Forwards `inbound` to `target` until either side closes or the link
/// drops; returning closes both sockets.
pub(super) async fn run(
    inbound: TcpStream,
    target: SocketAddr,
    faults: watch::Receiver<Faults>,
    counters: Arc<Counters>,
) {
    let _open = Open::new(counters.clone());
    let outbound = tokio::select! {
        connected = TcpStream::connect(target) => match connected {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!("proxy to {target}: dial failed: {e}");
                return;
            }
        },
        _ = dropped(faults.clone()) => return,
    };
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (from_dialer, to_dialer) = inbound.into_split();
    let (from_target, to_target) = outbound.into_split();
    let forward = pump(from_dialer, to_target, Direction::Forward, faults.clone(), counters.clone());
    let backward = pump(from_target, to_dialer, Direction::Backward, faults.clone(), counters);
    tokio::select! {
        _ = async { tokio::join!(forward, backward) } => {}
        _ = dropped(faults) => {}
    }
}

/// Moves bytes one way: a reader takes chunks while the way is open and
/// stamps each with the time it may be delivered; a writer delivers them
/// then, waiting while the way is blocked. End of input is passed on as a
/// half-close.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    direction: Direction,
    faults: watch::Receiver<Faults>,
    counters: Arc<Counters>,
) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(IN_FLIGHT);
    let mut reader_faults = faults.clone();
    let reader = async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            if !open_way(&mut reader_faults, direction).await {
                return;
            }
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let due = Instant::now() + reader_faults.borrow().delay;
            if tx.send((due, buf[..n].to_vec())).await.is_err() {
                return;
            }
        }
    };
    let mut writer_faults = faults;
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if !open_way(&mut writer_faults, direction).await || to.write_all(&bytes).await.is_err() {
                return;
            }
            counters.bytes(direction).fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
