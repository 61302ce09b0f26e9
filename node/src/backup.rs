//! `SaveSnapshot`: a consistent backup of the whole hub, streamed from the
//! node asked, which keeps serving. `fleet-node restore` is the other half
//! (`fleet_raft::restore`).

use std::pin::Pin;

use fleet_proto::fleet::SnapshotChunk;
use fleet_raft::Consensus;
use futures::Stream;
use tonic::Status;

use crate::blocking::blocking;
use crate::error::{raft_error, storage_error};

/// Bytes per streamed chunk (well under the gRPC message limit).
const CHUNK: usize = 1024 * 1024;

/// The chunks of a backup.
pub type SnapshotStream = Pin<Box<dyn Stream<Item = Result<SnapshotChunk, Status>> + Send>>;

/// Takes a backup at an applied index at least as new as every write
/// acknowledged before the call (a linearizable read barrier), from one
/// read transaction of this node's store, and streams it.
pub async fn save(consensus: &Consensus) -> Result<SnapshotStream, Status> {
    consensus.linearizable_index().await.map_err(raft_error)?;
    let store = consensus.store().clone();
    let (bytes, info) = blocking(move || store.export_backup().map_err(storage_error)).await?;
    tracing::info!(index = info.index, objects = info.objects, bytes = info.bytes, sha256 = %info.sha256, "backup taken");
    let total = bytes.len();
    let chunks = (0..total.div_ceil(CHUNK).max(1)).map(move |i| {
        let data = bytes[i * CHUNK..((i + 1) * CHUNK).min(total)].to_vec();
        Ok(match i {
            0 => SnapshotChunk {
                data,
                index: info.index,
                objects: info.objects as u64,
                total_bytes: info.bytes as u64,
                sha256: info.sha256.clone(),
            },
            _ => SnapshotChunk { data, ..Default::default() },
        })
    });
    Ok(Box::pin(futures::stream::iter(chunks)))
}
