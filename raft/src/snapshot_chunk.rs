//! The wire form of one InstallSnapshot chunk.
//!
//! openraft's `InstallSnapshotRequest` derives serde with its chunk as a
//! plain `Vec<u8>`, which MessagePack writes as an array of integers: one
//! marker per byte, up to twice the size, and decoded one element at a time.
//! A 3 MiB chunk then costs more CPU to encode and decode than the rest of a
//! snapshot transfer, on a leader and a follower that are also replicating.
//! This form carries the same fields under the same names with the chunk as
//! one MessagePack `bin`. It also decodes the older form (an array), so a
//! node reads chunks from a leader that has not been upgraded yet; a node
//! not yet upgraded cannot read this form, and catches up by snapshot once
//! it is (log replication is unchanged).

use fleet_statemachine::raft_types::SnapshotMeta;
use fleet_statemachine::TypeConfig;
use openraft::raft::InstallSnapshotRequest;
use openraft::Vote;
use serde::{Deserialize, Serialize};

/// One chunk of a snapshot as sent between nodes.
#[derive(Serialize, Deserialize)]
pub struct SnapshotChunk {
    vote: Vote<u64>,
    meta: SnapshotMeta,
    offset: u64,
    #[serde(with = "serde_bytes")]
    data: Vec<u8>,
    done: bool,
}

impl From<InstallSnapshotRequest<TypeConfig>> for SnapshotChunk {
    fn from(r: InstallSnapshotRequest<TypeConfig>) -> SnapshotChunk {
        SnapshotChunk { vote: r.vote, meta: r.meta, offset: r.offset, data: r.data, done: r.done }
    }
}

impl From<SnapshotChunk> for InstallSnapshotRequest<TypeConfig> {
    fn from(c: SnapshotChunk) -> InstallSnapshotRequest<TypeConfig> {
        InstallSnapshotRequest { vote: c.vote, meta: c.meta, offset: c.offset, data: c.data, done: c.done }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode, encode};
    use openraft::{CommittedLeaderId, LogId};

    fn request(data: Vec<u8>) -> InstallSnapshotRequest<TypeConfig> {
        let log_id = LogId::new(CommittedLeaderId::new(3, 1), 42);
        InstallSnapshotRequest {
            vote: Vote::new_committed(3, 1),
            meta: SnapshotMeta { last_log_id: Some(log_id), snapshot_id: "3-1-42".into(), ..Default::default() },
            offset: 7,
            data,
            done: true,
        }
    }

    #[test]
    fn a_chunk_travels_as_one_bin_and_decodes_to_the_same_request() {
        let data: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
        let wire = encode(&SnapshotChunk::from(request(data.clone()))).expect("encode");
        // One bin of the chunk's size plus a few header bytes, not an array
        // of up to two bytes per element.
        assert!(wire.len() < data.len() + 200, "{} bytes on the wire for {}", wire.len(), data.len());
        let back: InstallSnapshotRequest<TypeConfig> = decode::<SnapshotChunk>(&wire).expect("decode").into();
        assert_eq!(back, request(data));
    }

    #[test]
    fn a_chunk_in_the_older_array_form_is_still_read() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1_000).collect();
        let older = encode(&request(data.clone())).expect("encode the older form");
        assert!(older.len() > data.len() + 100, "the older form writes an array");
        let back: InstallSnapshotRequest<TypeConfig> = decode::<SnapshotChunk>(&older).expect("decode").into();
        assert_eq!(back, request(data));
    }
}
