//! Deterministic apply of committed entries.
//!
//! An entry carries a [`Proposal`]: several commands, each atomic on its own.
//! They run in order against one overlay of pending changes on top of the
//! committed tables; a refused command is rolled back from the overlay (an
//! undo journal) and the others stand. The overlay is written once per entry,
//! and watch events are derived per object from its state before and after
//! the entry, so every event at a resourceVersion describes the state at that
//! version. `last_applied` is written in the same transaction as the data,
//! together with membership.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use fleet_api::{Object, ObjectKey};
use openraft::{EntryPayload, RaftLogId};
use redb::{Durability, MultimapTable, ReadableMultimapTable, ReadableTable, Table};

use crate::command::{Action, Command, Op, OpOutcome, Response, StoreError};
use crate::error::Error;
use crate::finalizers;
use crate::proposal::Proposal;
use crate::raft_types::{StoredMembership, TypeConfig};
use crate::store::{
    decode_object, encode_meta, index_namespace, namespace_of_key, read_meta, unindex_namespace, Store, META,
    META_LAST_APPLIED, META_MEMBERSHIP, META_RETIRED, NAMESPACES, OBJECTS, OWNERS,
};
use crate::watch::{EventJson, EventType, WatchEvent};

type Entry = openraft::Entry<TypeConfig>;

impl Store {
    /// Applies committed entries in one write transaction. With `durable`
    /// false the commit is not fsync'd: the Raft log still holds the entries
    /// (it is purged only behind a snapshot, and building a snapshot makes the
    /// state machine durable first), so a crash replays them.
    pub fn apply_entries(&self, entries: Vec<Entry>, durable: bool) -> Result<Vec<Vec<Response>>, Error> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(if durable { Durability::Immediate } else { Durability::None })?;
        let mut responses = Vec::with_capacity(entries.len());
        let mut events = Vec::new();
        let mut last = None;
        let mut retired = None;
        {
            let mut objects = txn.open_table(OBJECTS)?;
            let mut owners = txn.open_multimap_table(OWNERS)?;
            let mut namespaces = txn.open_multimap_table(NAMESPACES)?;
            let mut meta = txn.open_table(META)?;
            for entry in entries {
                let log_id = *entry.get_log_id();
                last = Some(log_id);
                match entry.payload {
                    EntryPayload::Blank => responses.push(Vec::new()),
                    EntryPayload::Membership(m) => {
                        let before = read_meta::<StoredMembership>(&meta, META_MEMBERSHIP)?.unwrap_or_default();
                        let mut now = read_meta::<BTreeSet<u64>>(&meta, META_RETIRED)?.unwrap_or_default();
                        let stored = StoredMembership::new(Some(log_id), m);
                        retire_removed(&mut now, &before, &stored);
                        meta.insert(META_RETIRED, encode_meta(&now)?.as_slice())?;
                        meta.insert(META_MEMBERSHIP, encode_meta(&stored)?.as_slice())?;
                        retired = Some(now);
                        responses.push(Vec::new());
                    }
                    EntryPayload::Normal(proposal) => {
                        let index = log_id.index;
                        let mut overlay = Overlay::default();
                        let tables = Tables { objects: &objects, owners: &owners, namespaces: &namespaces };
                        let replies = apply_proposal(&mut overlay, &tables, proposal, index)?;
                        overlay.flush(&mut objects, &mut owners, &mut namespaces, index, &mut events)?;
                        responses.push(replies);
                    }
                }
            }
            if let Some(last) = last {
                meta.insert(META_LAST_APPLIED, encode_meta(&last)?.as_slice())?;
            }
        }
        self.commit_timed(txn, durable)?;
        if let Some(retired) = retired {
            self.set_retired(retired);
        }
        self.hub().publish(events);
        if let Some(last) = last {
            self.set_applied(last.index);
        }
        Ok(responses)
    }
}

/// Updates `retired` for a change of membership from `before` to `after`:
/// the nodes `before` had and `after` lacks are retired; the nodes `after`
/// has are not (an id added back is a member again).
fn retire_removed(retired: &mut BTreeSet<u64>, before: &StoredMembership, after: &StoredMembership) {
    let kept: BTreeSet<u64> = after.membership().nodes().map(|(id, _)| *id).collect();
    retired.extend(before.membership().nodes().map(|(id, _)| *id).filter(|id| !kept.contains(id)));
    retired.retain(|id| !kept.contains(id));
}

enum Refusal {
    Store(StoreError),
    Storage(Error),
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        Refusal::Store(e)
    }
}

impl<E: Into<Error>> From<E> for Refusal {
    fn from(e: E) -> Self {
        Refusal::Storage(e.into())
    }
}

/// The committed tables a command reads (as of the start of its entry):
/// the objects and the owner and namespace indexes.
struct Tables<'t, 'txn> {
    objects: &'t Table<'txn, &'static str, &'static [u8]>,
    owners: &'t MultimapTable<'txn, &'static str, &'static str>,
    namespaces: &'t MultimapTable<'txn, &'static str, &'static str>,
}

/// Applies every command of a proposal, each all-or-nothing.
fn apply_proposal(
    overlay: &mut Overlay,
    tables: &Tables,
    proposal: Proposal,
    index: u64,
) -> Result<Vec<Response>, Error> {
    let mut replies = Vec::with_capacity(proposal.len());
    for command in proposal.into_commands()? {
        let mark = overlay.mark();
        match overlay.run(tables, command, index) {
            Ok(outcomes) => replies.push(Response::Applied { index, outcomes }),
            Err(Refusal::Store(error)) => {
                overlay.rollback(mark);
                replies.push(Response::Refused { index, error });
            }
            Err(Refusal::Storage(e)) => return Err(e),
        }
    }
    Ok(replies)
}

/// `existing` with `status` in place of its own. Built field by field:
/// cloning the whole object first would copy the status being replaced,
/// which for a placement on thousands of clusters is megabytes.
fn with_status(existing: &Object, status: Option<serde_json::Value>) -> Object {
    let mut rest: serde_json::Map<String, serde_json::Value> =
        existing.rest.iter().filter(|(k, _)| k.as_str() != "status").map(|(k, v)| (k.clone(), v.clone())).collect();
    if let Some(status) = status {
        rest.insert("status".into(), status);
    }
    Object {
        api_version: existing.api_version.clone(),
        kind: existing.kind.clone(),
        metadata: existing.metadata.clone(),
        rest,
    }
}

/// An object as the table holds it: decoded, and its stored JSON.
type Stored = (Arc<Object>, Arc<[u8]>);

/// Changes of one entry, not yet written (`None` = deleted), with an undo
/// journal so a refused command can be taken back. Objects are shared
/// between the overlay, the answers and the watch events.
#[derive(Default)]
struct Overlay {
    changes: BTreeMap<String, Option<Arc<Object>>>,
    /// (key, what `changes` held for it before) for every change, in order.
    undo: Vec<(String, Option<Option<Arc<Object>>>)>,
    /// What the table held for each key read during this entry, decoded and
    /// as stored: writing the changes and deriving events needs the state
    /// before, and this spares reading and decoding it a second time (the
    /// stored JSON goes to the watch history of a delete or label change).
    committed: HashMap<String, Option<Stored>>,
}

impl Overlay {
    fn get(&mut self, objects: &Table<&str, &[u8]>, key: &str) -> Result<Option<Arc<Object>>, Refusal> {
        if let Some(change) = self.changes.get(key) {
            return Ok(change.clone());
        }
        Ok(self.committed(objects, key)?.map(|(object, _)| object))
    }

    /// The table's state of `key` (as of the start of this entry), read once.
    fn committed(&mut self, objects: &Table<&str, &[u8]>, key: &str) -> Result<Option<Stored>, Error> {
        if let Some(known) = self.committed.get(key) {
            return Ok(known.clone());
        }
        let read = match objects.get(key)? {
            Some(v) => Some((Arc::new(decode_object(key, v.value())?), Arc::from(v.value()))),
            None => None,
        };
        self.committed.insert(key.to_string(), read.clone());
        Ok(read)
    }

    fn set(&mut self, key: String, value: Option<Arc<Object>>) {
        let before = self.changes.insert(key.clone(), value);
        self.undo.push((key, before));
    }

    fn put(&mut self, key: String, object: Arc<Object>) {
        self.set(key, Some(object));
    }

    /// Where the journal stands (before a command).
    fn mark(&self) -> usize {
        self.undo.len()
    }

    /// Takes back every change made since `mark`.
    fn rollback(&mut self, mark: usize) {
        while self.undo.len() > mark {
            let Some((key, before)) = self.undo.pop() else { break };
            match before {
                Some(value) => self.changes.insert(key, value),
                None => self.changes.remove(&key),
            };
        }
    }

    fn run(&mut self, tables: &Tables, command: Command, index: u64) -> Result<Vec<OpOutcome>, Refusal> {
        let Tables { objects, owners, namespaces } = *tables;
        let Command { now, ops } = command;
        let mut outcomes = Vec::with_capacity(ops.len());
        for op in ops {
            let outcome = match op {
                Op::Create { object } => self.create(objects, object, &now, index, true)?,
                Op::Apply { mut object, uid } => {
                    let key = ObjectKey::of(&object).storage_key();
                    match self.get(objects, &key)? {
                        Some(existing) => {
                            let outcome = self.replace(key.clone(), existing, object, index)?;
                            self.release_if_finalized(objects, owners, key, outcome, &now, index)?
                        }
                        None if object.metadata.resource_version_number().is_some() => {
                            return Err(StoreError::NotFound { key: ObjectKey::of(&object) }.into())
                        }
                        None => {
                            object.metadata.uid = uid;
                            self.create(objects, object, &now, index, false)?
                        }
                    }
                }
                Op::Update { object } => {
                    let key = ObjectKey::of(&object).storage_key();
                    let existing = self.get(objects, &key)?.ok_or_else(|| not_found(&object))?;
                    let outcome = self.replace(key.clone(), existing, object, index)?;
                    self.release_if_finalized(objects, owners, key, outcome, &now, index)?
                }
                Op::UpdateStatus { mut object } => {
                    let key = ObjectKey::of(&object).storage_key();
                    let existing = self.get(objects, &key)?.ok_or_else(|| not_found(&object))?;
                    check_precondition(&object, &existing)?;
                    let status = object.rest.remove("status");
                    if existing.status() == status.as_ref() {
                        OpOutcome { action: Action::Unchanged, object: existing }
                    } else {
                        self.configure(key, with_status(&existing, status), index)
                    }
                }
                Op::Delete { key, resource_version } => {
                    let storage_key = key.storage_key();
                    let existing =
                        self.get(objects, &storage_key)?.ok_or_else(|| StoreError::NotFound { key: key.clone() })?;
                    let current = existing.metadata.resource_version_number().unwrap_or(0);
                    if let Some(expected) = resource_version {
                        if expected != current {
                            return Err(StoreError::Conflict { key, expected, current }.into());
                        }
                    }
                    if !existing.metadata.finalizers.is_empty() {
                        // Like Kubernetes: the finalizers' owners finish the
                        // deletion by removing them.
                        outcomes.push(self.mark_deleting(storage_key, existing, &now, index));
                        continue;
                    }
                    let mut last = Object::clone(&existing);
                    last.metadata.set_resource_version(index);
                    self.delete_cascading(objects, owners, storage_key, existing, &now, index)?;
                    if key.group.is_empty() && key.kind == "Namespace" {
                        // Like Kubernetes: a namespace takes everything in it along.
                        for member in self.namespace_members(namespaces, &key.name)? {
                            if let Some(object) = self.get(objects, &member)? {
                                self.delete_cascading(objects, owners, member, object, &now, index)?;
                            }
                        }
                    }
                    OpOutcome { action: Action::Deleted, object: Arc::new(last) }
                }
                Op::CheckGeneration { key, generation } => {
                    let existing = self
                        .get(objects, &key.storage_key())?
                        .ok_or_else(|| StoreError::NotFound { key: key.clone() })?;
                    let current = existing.metadata.generation;
                    if current != generation {
                        return Err(StoreError::GenerationConflict { key, expected: generation, current }.into());
                    }
                    OpOutcome { action: Action::Unchanged, object: existing }
                }
                Op::Check { key, resource_version } => {
                    let existing = self
                        .get(objects, &key.storage_key())?
                        .ok_or_else(|| StoreError::NotFound { key: key.clone() })?;
                    let current = existing.metadata.resource_version_number().unwrap_or(0);
                    if current != resource_version {
                        return Err(StoreError::Conflict { key, expected: resource_version, current }.into());
                    }
                    OpOutcome { action: Action::Unchanged, object: existing }
                }
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    fn create(
        &mut self,
        objects: &Table<&str, &[u8]>,
        mut object: Object,
        now: &str,
        index: u64,
        keep_status: bool,
    ) -> Result<OpOutcome, Refusal> {
        let key = ObjectKey::of(&object);
        let storage_key = key.storage_key();
        if self.get(objects, &storage_key)?.is_some() {
            return Err(StoreError::AlreadyExists { key }.into());
        }
        if object.metadata.uid.is_empty() {
            return Err(StoreError::Invalid(format!("{key}: metadata.uid must be set by the proposer")).into());
        }
        if !keep_status {
            object.rest.remove("status");
        }
        object.metadata.generation = 1;
        object.metadata.creation_timestamp = Some(now.to_string());
        object.metadata.deletion_timestamp = None;
        object.metadata.set_resource_version(index);
        let object = Arc::new(object);
        self.put(storage_key, object.clone());
        Ok(OpOutcome { action: Action::Created, object })
    }

    /// Replaces spec and user metadata of `existing` with those of `desired`,
    /// keeping identity, creation time and status.
    fn replace(
        &mut self,
        key: String,
        existing: Arc<Object>,
        desired: Object,
        index: u64,
    ) -> Result<OpOutcome, Refusal> {
        check_precondition(&desired, &existing)?;
        finalizers::check_no_new_finalizers(&existing, &desired)?;
        // Built from the desired object's own parts (moved, not copied) and
        // what the store keeps of the existing one: identity, creation time
        // and status.
        let Object { api_version, metadata: wanted, mut rest, .. } = desired;
        let mut metadata = existing.metadata.clone();
        metadata.labels = wanted.labels;
        metadata.annotations = wanted.annotations;
        metadata.owner_references = wanted.owner_references;
        metadata.finalizers = wanted.finalizers;
        // A write that names no field managers keeps the recorded ones.
        if !wanted.managed_fields.is_empty() {
            metadata.managed_fields = wanted.managed_fields;
        }
        rest.remove("status");
        if let Some(status) = existing.rest.get("status") {
            rest.insert("status".into(), status.clone());
        }
        let mut updated = Object { api_version, kind: existing.kind.clone(), metadata, rest };
        if !updated.same_spec(&existing) {
            updated.metadata.generation = existing.metadata.generation + 1;
        }
        Ok(self.finish_update(key, existing, updated, index))
    }

    /// Sets `deletionTimestamp` on an object that has finalizers (once).
    fn mark_deleting(&mut self, key: String, existing: Arc<Object>, now: &str, index: u64) -> OpOutcome {
        let mut updated = Object::clone(&existing);
        finalizers::mark_deleting(&mut updated, now);
        self.finish_update(key, existing, updated, index)
    }

    /// Deletes an object being deleted whose last finalizer a write just
    /// removed, answering that write with the deletion.
    fn release_if_finalized(
        &mut self,
        objects: &Table<&str, &[u8]>,
        owners: &MultimapTable<&str, &str>,
        key: String,
        outcome: OpOutcome,
        now: &str,
        index: u64,
    ) -> Result<OpOutcome, Refusal> {
        if outcome.action == Action::Unchanged || !finalizers::is_released(&outcome.object) {
            return Ok(outcome);
        }
        let object = outcome.object.clone();
        self.delete_cascading(objects, owners, key, object.clone(), now, index)?;
        Ok(OpOutcome { action: Action::Deleted, object })
    }

    fn finish_update(&mut self, key: String, existing: Arc<Object>, updated: Object, index: u64) -> OpOutcome {
        if updated == *existing {
            return OpOutcome { action: Action::Unchanged, object: existing };
        }
        self.configure(key, updated, index)
    }

    /// Writes `updated`, known to differ from what the key held, at
    /// version `index`.
    fn configure(&mut self, key: String, mut updated: Object, index: u64) -> OpOutcome {
        updated.metadata.set_resource_version(index);
        let updated = Arc::new(updated);
        self.put(key, updated.clone());
        OpOutcome { action: Action::Configured, object: updated }
    }

    /// Deletes an object, then its dependents: a dependent whose only owner
    /// is gone is deleted (recursively); one with other owners loses the
    /// reference to the deleted owner.
    fn delete_cascading(
        &mut self,
        objects: &Table<&str, &[u8]>,
        owners: &MultimapTable<&str, &str>,
        key: String,
        object: Arc<Object>,
        now: &str,
        index: u64,
    ) -> Result<(), Refusal> {
        let mut pending = vec![(key, object)];
        while let Some((key, object)) = pending.pop() {
            if !object.metadata.finalizers.is_empty() {
                // A dependent (or namespace member) with finalizers waits for them.
                let existing = self.get(objects, &key)?.unwrap_or_else(|| object.clone());
                let mut marked = Object::clone(&object);
                finalizers::mark_deleting(&mut marked, now);
                self.finish_update(key, existing, marked, index);
                continue;
            }
            self.set(key.clone(), None);
            let uid = object.metadata.uid.clone();
            if uid.is_empty() {
                continue;
            }
            for dep_key in self.dependents(owners, &uid)? {
                let Some(dep) = self.get(objects, &dep_key)? else { continue };
                if !dep.metadata.owner_references.iter().any(|r| r.uid == uid) {
                    continue;
                }
                let mut dep = Object::clone(&dep);
                dep.metadata.owner_references.retain(|r| r.uid != uid);
                if dep.metadata.owner_references.is_empty() {
                    pending.push((dep_key, Arc::new(dep)));
                } else {
                    dep.metadata.set_resource_version(index);
                    self.put(dep_key, Arc::new(dep));
                }
            }
        }
        Ok(())
    }

    /// Storage keys of the objects in `namespace`, committed or written by
    /// this entry, in key order: the committed ones from the namespace
    /// index (never a scan of every key), corrected by this entry's changes.
    fn namespace_members(
        &self,
        namespaces: &MultimapTable<&str, &str>,
        namespace: &str,
    ) -> Result<BTreeSet<String>, Refusal> {
        let mut keys = BTreeSet::new();
        for value in namespaces.get(namespace)? {
            keys.insert(value?.value().to_string());
        }
        for (key, change) in &self.changes {
            if namespace_of_key(key) == namespace {
                match change {
                    Some(_) => keys.insert(key.clone()),
                    None => keys.remove(key),
                };
            }
        }
        Ok(keys)
    }

    /// Storage keys of objects that name `uid` as an owner: committed ones
    /// from the index, plus ones this command wrote.
    fn dependents(&self, owners: &MultimapTable<&str, &str>, uid: &str) -> Result<BTreeSet<String>, Refusal> {
        let mut keys = BTreeSet::new();
        for value in owners.get(uid)? {
            keys.insert(value?.value().to_string());
        }
        for (key, change) in &self.changes {
            if let Some(obj) = change {
                if obj.metadata.owner_references.iter().any(|r| r.uid == uid) {
                    keys.insert(key.clone());
                }
            }
        }
        Ok(keys)
    }

    /// Writes the changes and the owner index, and turns them into events:
    /// one per object, from its state before the entry to its state after.
    fn flush(
        mut self,
        objects: &mut Table<&str, &[u8]>,
        owners: &mut MultimapTable<&str, &str>,
        namespaces: &mut MultimapTable<&str, &str>,
        index: u64,
        events: &mut Vec<(WatchEvent, EventJson)>,
    ) -> Result<(), Error> {
        for (key, change) in std::mem::take(&mut self.changes) {
            let (old, old_json) = match self.committed(objects, &key)? {
                Some((old, json)) => (Some(old), Some(json)),
                None => (None, None),
            };
            if let Some(old) = &old {
                for r in &old.metadata.owner_references {
                    owners.remove(r.uid.as_str(), key.as_str())?;
                }
            }
            let (event_type, event_object, previous, json) = match (change, old) {
                (Some(object), old) => {
                    let bytes = object.to_json();
                    objects.insert(key.as_str(), bytes.as_slice())?;
                    for r in &object.metadata.owner_references {
                        owners.insert(r.uid.as_str(), key.as_str())?;
                    }
                    if old.is_none() {
                        index_namespace(namespaces, &key)?;
                    }
                    let (event_type, previous) = match old {
                        Some(old) if old.metadata.labels != object.metadata.labels => {
                            let mut old = Object::clone(&old);
                            old.metadata.set_resource_version(index);
                            (EventType::Modified, Some(Arc::new(old)))
                        }
                        Some(_) => (EventType::Modified, None),
                        None => (EventType::Added, None),
                    };
                    let previous_json = previous.as_ref().and(old_json).map(|j| j.to_vec());
                    (event_type, object, previous, EventJson { object: bytes, previous: previous_json })
                }
                (None, Some(last)) => {
                    objects.remove(key.as_str())?;
                    unindex_namespace(namespaces, &key)?;
                    let mut last = Object::clone(&last);
                    last.metadata.set_resource_version(index);
                    let json = EventJson { object: old_json.map(|j| j.to_vec()).unwrap_or_default(), previous: None };
                    (EventType::Deleted, Arc::new(last), None, json)
                }
                // Created and deleted within one entry: nobody saw it.
                (None, None) => continue,
            };
            let size = json.object.len() + json.previous.as_ref().map_or(0, Vec::len);
            let event = WatchEvent {
                event_type,
                key: ObjectKey::of(&event_object),
                object: event_object,
                resource_version: index,
                size,
                previous,
            };
            events.push((event, json));
        }
        Ok(())
    }
}

fn not_found(object: &Object) -> StoreError {
    StoreError::NotFound { key: ObjectKey::of(object) }
}

fn check_precondition(desired: &Object, existing: &Object) -> Result<(), StoreError> {
    if desired.metadata.resource_version.is_empty() {
        return Ok(());
    }
    let key = ObjectKey::of(existing);
    let current = existing.metadata.resource_version_number().unwrap_or(0);
    match desired.metadata.resource_version_number() {
        Some(expected) if expected == current => Ok(()),
        Some(expected) => Err(StoreError::Conflict { key, expected, current }),
        None => Err(StoreError::Invalid(format!(
            "{key}: metadata.resourceVersion: Invalid value: {:?}: must be a decimal number",
            desired.metadata.resource_version
        ))),
    }
}
