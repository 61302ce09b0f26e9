//! The on-disk store of the embedded target, in its own directory (the
//! agent uses `DATA_DIR/embedded/`, [`STORE_DIR`]):
//!
//! - `objects/<group>_<Kind>_<namespace>_<name>.json`: one [`Record`] per
//!   object (components percent-escaped, so `_` only separates; names too
//!   long for a file name are shortened and suffixed with a hash),
//! - `config.json`: the [`SimConfig`](super::SimConfig) of the running agent,
//!   so that readers simulate status exactly as it does,
//! - `state.json`: the resourceVersion counter, saved when objects are deleted.
//!
//! Every file is written to a temporary file, fsynced, renamed over the old
//! one and the directory fsynced: a crash leaves the old or the new version,
//! never a torn one. Readers (`fleet-agent inspect`) take no lock: they list
//! the directory and read whole files, skipping files that vanish meanwhile.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use fleet_api::{Object, ObjectKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::config::StoredConfig;
use crate::targets::TargetError;

/// The directory of the embedded target's store under an agent's data dir
/// (where `fleet-agent inspect --data-dir` looks).
pub const STORE_DIR: &str = "embedded";
const OBJECTS_DIR: &str = "objects";
const CONFIG_FILE: &str = "config.json";
const STATE_FILE: &str = "state.json";
/// File names longer than this are shortened (most filesystems allow 255 bytes).
const MAX_FILE_NAME: usize = 200;

/// One stored object and what the simulation needs to know about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Record {
    /// The object as stored: server-set metadata and spec fields, no `status`
    /// (status is simulated when the object is read).
    pub object: Object,
    /// The manifest Fleet last applied (server fields stripped), for the
    /// three-way merge of the next apply; `None` for objects Fleet did not create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied: Option<Value>,
    /// When the current generation becomes available (RFC 3339).
    pub ready_at: String,
}

impl Record {
    /// When the current generation becomes available (`UNIX_EPOCH` if unreadable: ready).
    pub fn ready_time(&self) -> SystemTime {
        fleet_api::time::system_time(&self.ready_at).unwrap_or(SystemTime::UNIX_EPOCH)
    }
}

/// Formats a time as stored in [`Record::ready_at`].
pub(crate) fn format_time(time: SystemTime) -> String {
    fleet_api::time::rfc3339_millis(time)
}

/// The saved resourceVersion counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    resource_version: u64,
}

/// Paths of one store.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    root: PathBuf,
    objects: PathBuf,
}

fn io_error(path: &Path, what: &str, error: std::io::Error) -> TargetError {
    TargetError::Unavailable(format!("embedded target store: cannot {what} {}: {error}", path.display()))
}

impl Store {
    /// The store kept in the directory `root` (nothing is created).
    pub fn new(root: &Path) -> Store {
        Store { root: root.to_path_buf(), objects: root.join(OBJECTS_DIR) }
    }

    /// The store of an agent's data dir: `data_dir/embedded` ([`STORE_DIR`]),
    /// or `data_dir` itself when it is a store (a user pointing at the
    /// store directly).
    pub fn of_data_dir(data_dir: &Path) -> Store {
        let store = Store::new(&data_dir.join(STORE_DIR));
        if !store.exists() && data_dir.join(OBJECTS_DIR).is_dir() && data_dir.join(CONFIG_FILE).is_file() {
            return Store::new(data_dir);
        }
        store
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the store has been created.
    pub fn exists(&self) -> bool {
        self.objects.is_dir()
    }

    /// Creates the directories and removes temporary files a crash left.
    pub fn create(&self) -> Result<(), TargetError> {
        fs::create_dir_all(&self.objects).map_err(|e| io_error(&self.objects, "create", e))?;
        sync_dir(&self.root)?;
        if let Some(parent) = self.root.parent() {
            sync_dir(parent)?;
        }
        for dir in [&self.root, &self.objects] {
            let entries = fs::read_dir(dir).map_err(|e| io_error(dir, "list", e))?;
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().ends_with(".tmp") {
                    let path = entry.path();
                    fs::remove_file(&path).map_err(|e| io_error(&path, "remove", e))?;
                }
            }
        }
        Ok(())
    }

    /// Every stored record. Files removed while listing are skipped.
    pub fn load_all(&self) -> Result<Vec<Record>, TargetError> {
        let entries = match fs::read_dir(&self.objects) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&self.objects, "list", e)),
        };
        let mut records = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&self.objects, "list", e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            let path = entry.path();
            let bytes = match fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(io_error(&path, "read", e)),
            };
            let record: Record = serde_json::from_slice(&bytes).map_err(|e| {
                TargetError::Unavailable(format!(
                    "embedded target store: {} is not a stored object: {e}",
                    path.display()
                ))
            })?;
            records.push(record);
        }
        Ok(records)
    }

    /// Writes one record atomically.
    pub fn write(&self, record: &Record) -> Result<(), TargetError> {
        let bytes = serde_json::to_vec_pretty(record)
            .map_err(|e| TargetError::Unavailable(format!("embedded target store: cannot encode object: {e}")))?;
        write_atomic(&self.objects, &file_name(&ObjectKey::of(&record.object)), &bytes)
    }

    /// Removes one object's file (no error if it is absent).
    pub fn remove(&self, key: &ObjectKey) -> Result<(), TargetError> {
        let path = self.objects.join(file_name(key));
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&self.objects),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error(&path, "remove", e)),
        }
    }

    /// Saves the configuration for readers.
    pub fn write_config(&self, config: &StoredConfig) -> Result<(), TargetError> {
        let bytes = serde_json::to_vec_pretty(config)
            .map_err(|e| TargetError::Unavailable(format!("embedded target store: cannot encode config: {e}")))?;
        write_atomic(&self.root, CONFIG_FILE, &bytes)
    }

    /// The configuration the agent saved, if any.
    pub fn read_config(&self) -> Result<Option<StoredConfig>, TargetError> {
        let path = self.root.join(CONFIG_FILE);
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                TargetError::Unavailable(format!("embedded target store: {} is unreadable: {e}", path.display()))
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path, "read", e)),
        }
    }

    /// Saves the resourceVersion counter.
    pub fn write_resource_version(&self, resource_version: u64) -> Result<(), TargetError> {
        let bytes = serde_json::to_vec(&State { resource_version })
            .map_err(|e| TargetError::Unavailable(format!("embedded target store: cannot encode state: {e}")))?;
        write_atomic(&self.root, STATE_FILE, &bytes)
    }

    /// The saved resourceVersion counter (0 if never saved).
    pub fn read_resource_version(&self) -> Result<u64, TargetError> {
        let path = self.root.join(STATE_FILE);
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<State>(&bytes).map(|s| s.resource_version).map_err(|e| {
                TargetError::Unavailable(format!("embedded target store: {} is unreadable: {e}", path.display()))
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
            Err(e) => Err(io_error(&path, "read", e)),
        }
    }
}

/// Writes `dir/name` by way of a fsynced temporary file (`.NAME.tmp`)
/// renamed over it, and fsyncs the directory.
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), TargetError> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let mut file = File::create(&tmp).map_err(|e| io_error(&tmp, "create", e))?;
    file.write_all(bytes).map_err(|e| io_error(&tmp, "write", e))?;
    file.sync_all().map_err(|e| io_error(&tmp, "sync", e))?;
    drop(file);
    fs::rename(&tmp, &path).map_err(|e| io_error(&path, "replace", e))?;
    sync_dir(dir)
}

/// Makes a rename or removal in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), TargetError> {
    #[cfg(unix)]
    {
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io_error(dir, "sync", e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Keeps `[A-Za-z0-9.-]`, writes every other byte as `%XX`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The file name of an object: `<group>_<Kind>_<namespace>_<name>.json`.
pub(crate) fn file_name(key: &ObjectKey) -> String {
    let base = [&key.group, &key.kind, &key.namespace, &key.name].map(|s| escape(s)).join("_");
    if base.len() + ".json".len() <= MAX_FILE_NAME {
        return format!("{base}.json");
    }
    let hash = hex::encode(&Sha256::digest(base.as_bytes())[..16]);
    // `base` is ASCII, so any byte index is a char boundary.
    format!("{}~{hash}.json", &base[..MAX_FILE_NAME - hash.len() - 6])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(name: &str) -> Record {
        Record {
            object: serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "app"}, "data": {"a": "1"}
            }))
            .unwrap(),
            last_applied: Some(json!({"data": {"a": "1"}})),
            ready_at: format_time(SystemTime::UNIX_EPOCH),
        }
    }

    #[test]
    fn file_names_are_unambiguous_and_short() {
        let a = file_name(&ObjectKey::new("", "ConfigMap", "app", "x"));
        assert_eq!(a, "_ConfigMap_app_x.json");
        let rbac = file_name(&ObjectKey::new("rbac.authorization.k8s.io", "ClusterRole", "", "system:view_x"));
        assert_eq!(rbac, "rbac.authorization.k8s.io_ClusterRole__system%3Aview%5Fx.json");
        let long = "a".repeat(253);
        let one = file_name(&ObjectKey::new("example.com", "Widget", "ns", &long));
        let two = file_name(&ObjectKey::new("example.com", "Widget", "ns", &format!("{}b", &long[1..])));
        assert!(one.len() <= MAX_FILE_NAME && one.ends_with(".json"), "{one}");
        assert_ne!(one, two);
    }

    #[test]
    fn writes_reads_and_removes_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        assert!(!store.exists());
        assert!(store.load_all().unwrap().is_empty());
        store.create().unwrap();
        store.write(&record("one")).unwrap();
        store.write(&record("two")).unwrap();
        // A leftover temporary file is ignored by readers and cleaned on create.
        fs::write(store.objects.join(".junk.json.tmp"), b"{").unwrap();
        let mut names: Vec<String> = store.load_all().unwrap().into_iter().map(|r| r.object.metadata.name).collect();
        names.sort();
        assert_eq!(names, ["one", "two"]);
        store.create().unwrap();
        assert!(!store.objects.join(".junk.json.tmp").exists());
        store.remove(&ObjectKey::of(&record("one").object)).unwrap();
        store.remove(&ObjectKey::of(&record("one").object)).unwrap();
        assert_eq!(store.load_all().unwrap(), vec![record("two")]);
        assert_eq!(store.read_resource_version().unwrap(), 0);
        store.write_resource_version(42).unwrap();
        assert_eq!(store.read_resource_version().unwrap(), 42);
    }

    #[test]
    fn corrupt_files_are_reported_with_their_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        store.create().unwrap();
        fs::write(store.objects.join("bad.json"), b"not json").unwrap();
        let e = store.load_all().unwrap_err().to_string();
        assert!(e.contains("bad.json"), "{e}");
    }

    #[test]
    fn ready_time_round_trips() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
        let r = Record { ready_at: format_time(t), ..record("x") };
        assert_eq!(r.ready_time(), t);
    }
}
