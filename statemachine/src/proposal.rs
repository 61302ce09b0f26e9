//! [`Proposal`]: what one Raft entry carries, encoded once.
//!
//! An entry is written to the log on every node and sent to every follower
//! (and, for writes that arrive at a follower, forwarded to the leader first).
//! Encoding its commands again at each step was a large share of the hub's
//! CPU, so a proposal keeps the MessagePack bytes of its commands next to the
//! decoded commands: it serializes as those bytes, and cloning it (the log
//! cache, replication, apply) shares both.

use std::fmt;
use std::sync::Arc;

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::command::Command;
use crate::error::Error;

/// Commands from one or more clients, batched so many writes share one log
/// append (one fsync). Each command succeeds or fails on its own; all of
/// them share the entry's index as resourceVersion.
#[derive(Clone)]
pub struct Proposal(Arc<Parts>);

struct Parts {
    commands: Vec<Command>,
    /// MessagePack of `commands` (an array of [`EncodedCommand`]s).
    bytes: Vec<u8>,
}

/// One command with its MessagePack encoding, made where the command is
/// submitted (on the caller's task, in parallel), so a batch is assembled by
/// concatenation and sized exactly.
pub struct EncodedCommand {
    command: Command,
    bytes: Vec<u8>,
}

impl EncodedCommand {
    /// Encodes `command`.
    pub fn new(command: Command) -> Result<EncodedCommand, Error> {
        let bytes = rmp_serde::to_vec_named(&command)
            .map_err(|e| Error::Decode { what: "command (encoding)".into(), detail: e.to_string() })?;
        Ok(EncodedCommand { command, bytes })
    }

    /// Bytes of the encoding.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the encoding is empty (it never is; for clippy's sake).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl Proposal {
    /// A proposal of `commands`, encoded here.
    pub fn new(commands: Vec<Command>) -> Result<Proposal, Error> {
        let encoded = commands.into_iter().map(EncodedCommand::new).collect::<Result<Vec<_>, _>>()?;
        Ok(Proposal::from_encoded(encoded))
    }

    /// A proposal of commands encoded already: their bytes are concatenated
    /// behind a MessagePack array header, exactly as encoding the list would.
    pub fn from_encoded(encoded: Vec<EncodedCommand>) -> Proposal {
        let mut bytes = Vec::with_capacity(5 + encoded.iter().map(EncodedCommand::len).sum::<usize>());
        write_array_header(&mut bytes, encoded.len());
        let mut commands = Vec::with_capacity(encoded.len());
        for e in encoded {
            bytes.extend_from_slice(&e.bytes);
            commands.push(e.command);
        }
        Proposal(Arc::new(Parts { commands, bytes }))
    }

    /// Decodes a proposal from the bytes it serializes as, keeping them.
    fn from_bytes(bytes: Vec<u8>) -> Result<Proposal, Error> {
        let commands: Vec<Command> = rmp_serde::from_slice(&bytes)
            .map_err(|e| Error::Decode { what: "proposal".into(), detail: e.to_string() })?;
        Ok(Proposal(Arc::new(Parts { commands, bytes })))
    }

    /// The commands, in order.
    pub fn commands(&self) -> &[Command] {
        &self.0.commands
    }

    /// Bytes of the encoded commands (what the log and the wire carry).
    pub fn encoded_len(&self) -> usize {
        self.0.bytes.len()
    }
}

/// A MessagePack array header for `len` elements (fixarray, array 16 or array 32).
fn write_array_header(out: &mut Vec<u8>, len: usize) {
    if len < 16 {
        out.push(0x90 | len as u8);
    } else if let Ok(n) = u16::try_from(len) {
        out.push(0xdc);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        // A batch never comes near 2^32 commands (the batcher caps it far lower).
        out.push(0xdd);
        out.extend_from_slice(&(len.min(u32::MAX as usize) as u32).to_be_bytes());
    }
}

impl fmt::Debug for Proposal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proposal").field("commands", &self.0.commands).finish()
    }
}

impl PartialEq for Proposal {
    fn eq(&self, other: &Self) -> bool {
        self.0.commands == other.0.commands
    }
}

impl Serialize for Proposal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.0.bytes)
    }
}

impl<'de> Deserialize<'de> for Proposal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Proposal, D::Error> {
        deserializer.deserialize_byte_buf(ProposalVisitor)
    }
}

struct ProposalVisitor;

impl<'de> Visitor<'de> for ProposalVisitor {
    type Value = Proposal;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the MessagePack bytes of a proposal's commands")
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Proposal, E> {
        Proposal::from_bytes(v.to_vec()).map_err(E::custom)
    }

    fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Proposal, E> {
        Proposal::from_bytes(v).map_err(E::custom)
    }

    /// Formats without a bytes type (JSON) write bytes as a list of numbers.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Proposal, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(b) = seq.next_element::<u8>()? {
            bytes.push(b);
        }
        Proposal::from_bytes(bytes).map_err(A::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Op;
    use fleet_api::ObjectKey;

    fn command(i: u64) -> Command {
        let key = ObjectKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "default".into(),
            name: format!("c{i}"),
        };
        Command { now: "2026-11-21T00:00:00Z".into(), ops: vec![Op::Check { key, resource_version: i }] }
    }

    #[test]
    fn concatenated_commands_encode_exactly_as_the_list() {
        for n in [0usize, 1, 15, 16, 17, 300, 70_000] {
            let commands: Vec<Command> = (0..n as u64).map(command).collect();
            let proposal = Proposal::new(commands.clone()).unwrap();
            assert_eq!(proposal.0.bytes, rmp_serde::to_vec_named(&commands).unwrap(), "{n} commands");
            assert_eq!(proposal.commands(), commands.as_slice());
        }
    }

    #[test]
    fn round_trips_through_messagepack_and_json() {
        let proposal = Proposal::new((0..20).map(command).collect()).unwrap();
        let packed = rmp_serde::to_vec_named(&proposal).unwrap();
        let back: Proposal = rmp_serde::from_slice(&packed).unwrap();
        assert_eq!(back, proposal);
        assert_eq!(back.encoded_len(), proposal.encoded_len());
        let json = serde_json::to_vec(&proposal).unwrap();
        let back: Proposal = serde_json::from_slice(&json).unwrap();
        assert_eq!(back, proposal);
    }

    #[test]
    fn bytes_that_are_not_commands_are_refused() {
        let packed = rmp_serde::to_vec_named(&serde_bytes_like(&[0xc1, 0x00])).unwrap();
        let err = rmp_serde::from_slice::<Proposal>(&packed).unwrap_err();
        assert!(err.to_string().contains("proposal"), "{err}");
    }

    /// MessagePack `bin` of raw bytes, as a proposal is written.
    fn serde_bytes_like(b: &[u8]) -> impl Serialize + '_ {
        struct Raw<'a>(&'a [u8]);
        impl Serialize for Raw<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        Raw(b)
    }
}
