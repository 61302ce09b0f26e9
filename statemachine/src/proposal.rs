//! [`Proposal`]: what one Raft entry carries, encoded once.
//!
//! An entry is written to the log on every node and sent to every follower
//! (and, for writes that arrive at a follower, forwarded to the leader first).
//! Encoding its commands again at each step was a large share of the hub's
//! CPU, so a proposal keeps the MessagePack bytes of its commands next to the
//! decoded commands: it serializes as those bytes, and cloning it (the log
//! cache, replication, apply) shares both.
//!
//! A proposal read from the log or the wire is decoded only when its
//! commands are asked for (to apply them, or to check a follower's batch).
//! The leader reads older entries back from its log to send them to a
//! follower that fell behind: decoding them (objects as JSON trees) and
//! freeing them afterwards only to send their bytes again took most of the
//! Raft thread's time at 10,000 members.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::de::{Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::command::Command;
use crate::error::Error;

/// Commands from one or more clients, batched so many writes share one log
/// append (one fsync). Each command succeeds or fails on its own; all of
/// them share the entry's index as resourceVersion.
#[derive(Clone)]
pub struct Proposal(Arc<Parts>);

struct Parts {
    /// How many commands `bytes` holds (its array header says).
    count: usize,
    /// The commands, once decoded (at once when made from them).
    commands: OnceLock<Vec<Command>>,
    /// MessagePack of the commands (an array of [`EncodedCommand`]s).
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
    pub fn encoded_len(&self) -> usize {
        self.bytes.len()
    }

    /// The command encoded.
    pub fn command(&self) -> &Command {
        &self.command
    }
}

impl Proposal {
    /// A proposal of `commands`, encoded here.
    pub fn new(commands: Vec<Command>) -> Result<Proposal, Error> {
        let parts = commands.into_iter().map(|c| EncodedCommand::new(c).map(Part::Command));
        Ok(Proposal::concat(parts.collect::<Result<Vec<_>, _>>()?))
    }

    /// One proposal of the commands of `parts`, in order, without encoding
    /// any of them again: the leader merges batches forwarded by followers
    /// with its own into one entry.
    pub fn concat(parts: Vec<Part>) -> Proposal {
        let count: usize = parts.iter().map(Part::commands).sum();
        let mut bytes = Vec::with_capacity(5 + parts.iter().map(Part::encoded_len).sum::<usize>());
        write_array_header(&mut bytes, count);
        // The merged commands, if every part has them decoded (otherwise
        // they are decoded from the merged bytes when asked for).
        let mut commands = Some(Vec::with_capacity(count));
        for part in parts {
            match part {
                Part::Command(e) => {
                    bytes.extend_from_slice(&e.bytes);
                    if let Some(commands) = &mut commands {
                        commands.push(e.command);
                    }
                }
                Part::Batch(p) => {
                    bytes.extend_from_slice(p.body());
                    let decoded = match Arc::try_unwrap(p.0) {
                        Ok(parts) => parts.commands.into_inner(),
                        Err(shared) => shared.commands.get().cloned(),
                    };
                    match (&mut commands, decoded) {
                        (Some(commands), Some(decoded)) => commands.extend(decoded),
                        _ => commands = None,
                    }
                }
            }
        }
        let decoded = OnceLock::new();
        if let Some(commands) = commands {
            let _ = decoded.set(commands);
        }
        Proposal(Arc::new(Parts { count, commands: decoded, bytes }))
    }

    /// The encoded commands without the array header in front of them.
    fn body(&self) -> &[u8] {
        let header = array_header_len(self.0.count);
        self.0.bytes.get(header..).unwrap_or_default()
    }

    /// A proposal of the bytes it serializes as, kept as they are; only the
    /// array header in front is read now. They must be exactly what encoding
    /// the commands writes (a minimal array header, nothing after the array),
    /// so that [`Proposal::concat`] can take the commands' bytes behind the
    /// header as they are: [`Proposal::commands`] checks the rest.
    fn from_bytes(bytes: Vec<u8>) -> Result<Proposal, Error> {
        let refuse = |detail: String| Error::Decode { what: "proposal".into(), detail };
        let count = match bytes.first() {
            Some(&b) if b & 0xf0 == 0x90 => usize::from(b & 0x0f),
            Some(0xdc) => bytes.get(1..3).map(|n| usize::from(u16::from_be_bytes([n[0], n[1]]))).unwrap_or(usize::MAX),
            Some(0xdd) => {
                bytes.get(1..5).map(|n| u32::from_be_bytes([n[0], n[1], n[2], n[3]]) as usize).unwrap_or(usize::MAX)
            }
            _ => usize::MAX,
        };
        let mut header = Vec::with_capacity(5);
        write_array_header(&mut header, count);
        if count == usize::MAX || !bytes.starts_with(&header) {
            return Err(refuse("the list of commands does not start with a minimal array header".into()));
        }
        Ok(Proposal(Arc::new(Parts { count, commands: OnceLock::new(), bytes })))
    }

    /// Decodes the commands of `bytes`, which must hold nothing after them
    /// (their count is the header's, which [`Proposal::from_bytes`] read).
    fn decode(bytes: &[u8]) -> Result<Vec<Command>, Error> {
        let refuse = |detail: String| Error::Decode { what: "proposal".into(), detail };
        let mut de = rmp_serde::Deserializer::new(std::io::Cursor::new(bytes));
        let commands = Vec::<Command>::deserialize(&mut de).map_err(|e| refuse(e.to_string()))?;
        if de.position() != bytes.len() as u64 {
            return Err(refuse(format!("{} bytes after the commands", bytes.len() as u64 - de.position())));
        }
        Ok(commands)
    }

    /// The commands, in order, decoded on the first call if this proposal
    /// was read from the log or the wire.
    pub fn commands(&self) -> Result<&[Command], Error> {
        if let Some(commands) = self.0.commands.get() {
            return Ok(commands);
        }
        let decoded = Proposal::decode(&self.0.bytes)?;
        // Two callers may decode at once; either's result is the same.
        let _ = self.0.commands.set(decoded);
        Ok(self.0.commands.get().map(Vec::as_slice).unwrap_or_default())
    }

    /// The commands, owned, for the state machine to move their objects
    /// into the store instead of copying them: taken when this is the only
    /// handle, copied when another holds the decoded ones, decoded
    /// otherwise.
    pub fn into_commands(self) -> Result<Vec<Command>, Error> {
        match Arc::try_unwrap(self.0) {
            Ok(parts) => match parts.commands.into_inner() {
                Some(commands) => Ok(commands),
                None => Proposal::decode(&parts.bytes),
            },
            Err(shared) => match shared.commands.get() {
                Some(commands) => Ok(commands.clone()),
                None => Proposal::decode(&shared.bytes),
            },
        }
    }

    /// How many commands it holds.
    pub fn len(&self) -> usize {
        self.0.count
    }

    /// Whether it holds no command.
    pub fn is_empty(&self) -> bool {
        self.0.count == 0
    }

    /// Bytes of the encoded commands (what the log and the wire carry).
    pub fn encoded_len(&self) -> usize {
        self.0.bytes.len()
    }
}

/// What [`Proposal::concat`] merges.
pub enum Part {
    /// One client's command.
    Command(EncodedCommand),
    /// A batch proposed elsewhere (a follower's, forwarded to the leader).
    Batch(Proposal),
}

impl Part {
    /// How many commands it holds.
    pub fn commands(&self) -> usize {
        match self {
            Part::Command(_) => 1,
            Part::Batch(p) => p.len(),
        }
    }

    /// Bytes of its encoded commands.
    pub fn encoded_len(&self) -> usize {
        match self {
            Part::Command(e) => e.encoded_len(),
            Part::Batch(p) => p.encoded_len(),
        }
    }
}

/// Bytes of the MessagePack array header for `len` elements.
fn array_header_len(len: usize) -> usize {
    if len < 16 {
        1
    } else if len <= u16::MAX as usize {
        3
    } else {
        5
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
        match self.0.commands.get() {
            Some(commands) => f.debug_struct("Proposal").field("commands", commands).finish(),
            None => {
                f.debug_struct("Proposal").field("count", &self.0.count).field("bytes", &self.0.bytes.len()).finish()
            }
        }
    }
}

impl PartialEq for Proposal {
    /// Equal encodings: encoding the same commands always gives the same bytes.
    fn eq(&self, other: &Self) -> bool {
        self.0.bytes == other.0.bytes
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

    /// Logs written before proposals kept their bytes hold them as a map
    /// `{commands: [...]}`: read those, encoding the commands afresh.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Proposal, A::Error> {
        let mut commands: Option<Vec<Command>> = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "commands" {
                commands = Some(map.next_value()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        let commands = commands.ok_or_else(|| A::Error::missing_field("commands"))?;
        Proposal::new(commands).map_err(A::Error::custom)
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
            assert_eq!(proposal.commands().ok(), Some(commands.as_slice()));
        }
    }

    #[test]
    fn concatenated_batches_encode_exactly_as_the_whole_list() {
        for (a, b) in [(0u64, 3u64), (3, 20), (15, 1), (20, 70_000)] {
            let first: Vec<Command> = (0..a).map(command).collect();
            let second: Vec<Command> = (a..a + b).map(command).collect();
            let shared = Proposal::new(second.clone()).unwrap();
            let _other_holder = shared.clone();
            let parts = vec![
                Part::Batch(Proposal::new(first.clone()).unwrap()),
                Part::Command(EncodedCommand::new(command(99)).unwrap()),
                Part::Batch(shared),
            ];
            let merged = Proposal::concat(parts);
            let mut all = first;
            all.push(command(99));
            all.extend(second);
            assert_eq!(merged.0.bytes, rmp_serde::to_vec_named(&all).unwrap(), "{a} + 1 + {b} commands");
            assert_eq!(merged.commands().ok(), Some(all.as_slice()));
        }
    }

    #[test]
    fn proposals_in_the_earlier_log_format_are_read() {
        #[derive(Serialize)]
        struct Earlier {
            commands: Vec<Command>,
        }
        let commands: Vec<Command> = (0..3).map(command).collect();
        let packed = rmp_serde::to_vec_named(&Earlier { commands: commands.clone() }).unwrap();
        let read: Proposal = rmp_serde::from_slice(&packed).unwrap();
        assert_eq!(read.commands().ok(), Some(commands.as_slice()));
        assert_eq!(read, Proposal::new(commands).unwrap());
    }

    /// The leader applies the commands it holds; followers apply what they
    /// decode from the bytes. Both must be the same.
    #[test]
    fn objects_decode_to_exactly_what_was_encoded() {
        let documents = [
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": "n", "labels": {"x": "y"}, "annotations": {},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u"}]},
                "data": {"k": "v", "empty": ""}}),
            serde_json::json!({"apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
                "metadata": {"name": "p", "generation": 3, "resourceVersion": "17", "finalizers": ["f"]},
                "spec": {"policy": {"numberOfClusters": 3, "weights": [0.5, -1, 18446744073709551615u64, 1.0e300],
                    "nothing": null, "yes": true, "nested": [[], {}, [{"a": [1, 2]}]]}},
                "status": {"conditions": [{"type": "Scheduled", "status": "True"}]}}),
        ];
        let commands: Vec<Command> = documents
            .iter()
            .map(|d| {
                let object: fleet_api::Object = serde_json::from_value(d.clone()).unwrap();
                Command {
                    now: "2026-11-21T00:00:00Z".into(),
                    ops: vec![Op::Apply { object: object.clone(), uid: "u".into() }, Op::UpdateStatus { object }],
                }
            })
            .collect();
        let proposal = Proposal::new(commands.clone()).unwrap();
        let decoded = Proposal::from_bytes(proposal.0.bytes.clone()).unwrap();
        assert_eq!(decoded.commands().ok(), Some(commands.as_slice()));
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
    fn bytes_that_are_not_exactly_commands_are_refused() {
        let good = rmp_serde::to_vec_named(&vec![command(1)]).unwrap();
        let mut trailing = good.clone();
        trailing.push(0xc0);
        // The same one-element list behind a (valid but not minimal) array 16 header.
        let mut wide = vec![0xdc, 0x00, 0x01];
        wide.extend_from_slice(&good[1..]);
        for (bytes, why) in [(vec![0xc1, 0x00], "not MessagePack"), (trailing, "after"), (wide, "minimal")] {
            let packed = rmp_serde::to_vec_named(&serde_bytes_like(&bytes)).unwrap();
            // Refused when read, or (what only decoding finds) when its
            // commands are asked for.
            let err = rmp_serde::from_slice::<Proposal>(&packed)
                .map_err(|e| e.to_string())
                .and_then(|p| p.commands().map(|_| ()).map_err(|e| e.to_string()))
                .unwrap_err();
            assert!(err.contains("proposal"), "{err}");
            if why != "not MessagePack" {
                assert!(err.contains(why), "{err}");
            }
        }
    }

    #[test]
    fn a_proposal_read_is_decoded_only_when_its_commands_are_asked_for() {
        let commands: Vec<Command> = (0..20).map(command).collect();
        let bytes = rmp_serde::to_vec_named(&commands).unwrap();
        let read = Proposal::from_bytes(bytes.clone()).unwrap();
        assert!(read.0.commands.get().is_none());
        assert_eq!((read.len(), read.encoded_len()), (20, bytes.len()));
        // Sent on as it came, without decoding.
        assert_eq!(
            rmp_serde::to_vec_named(&read).unwrap(),
            rmp_serde::to_vec_named(&serde_bytes_like(&bytes)).unwrap()
        );
        assert!(read.0.commands.get().is_none());
        // Merged undecoded with decoded commands: the whole decodes from the merged bytes.
        let merged =
            Proposal::concat(vec![Part::Command(EncodedCommand::new(command(99)).unwrap()), Part::Batch(read.clone())]);
        assert!(merged.0.commands.get().is_none());
        let mut all = vec![command(99)];
        all.extend(commands.iter().cloned());
        assert_eq!(merged.commands().ok(), Some(all.as_slice()));
        assert_eq!(read.commands().ok(), Some(commands.as_slice()));
        assert!(read.0.commands.get().is_some(), "decoded once, kept");
    }

    /// Owned commands are the same whichever way they are had: taken from
    /// a sole decoded proposal, copied from a shared one, decoded from
    /// bytes read; a refusal of the bytes is still found.
    #[test]
    fn owned_commands_are_the_commands_however_they_are_had() {
        let commands: Vec<Command> = (0..20).map(command).collect();
        let bytes = rmp_serde::to_vec_named(&commands).unwrap();
        let sole = Proposal::new(commands.clone()).unwrap();
        assert_eq!(sole.into_commands().unwrap(), commands);
        let shared = Proposal::new(commands.clone()).unwrap();
        let other = shared.clone();
        assert_eq!(shared.into_commands().unwrap(), commands);
        assert_eq!(other.commands().unwrap(), commands.as_slice());
        let read = Proposal::from_bytes(bytes.clone()).unwrap();
        let read_too = read.clone();
        assert_eq!(read.into_commands().unwrap(), commands);
        assert_eq!(read_too.into_commands().unwrap(), commands);
        let mut trailing = bytes;
        trailing.push(0xc0);
        assert!(Proposal::from_bytes(trailing).unwrap().into_commands().is_err());
    }

    #[test]
    fn a_header_that_counts_other_than_the_commands_is_refused() {
        let mut bytes = rmp_serde::to_vec_named(&vec![command(1), command(2)]).unwrap();
        bytes[0] = 0x93; // three, for two commands
        let read = Proposal::from_bytes(bytes).unwrap();
        let err = read.commands().map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("proposal"), "{err}");
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
