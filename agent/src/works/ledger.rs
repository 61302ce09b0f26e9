//! What the agent placed for each Work, kept durably in `DIR/ledger/`, one
//! file per Work: the generation it applied and the objects it created. It
//! lets the agent delete exactly what a Work no longer holds (and only what
//! Fleet created), skip re-applying unchanged Work after a restart, and —
//! with the manifest each object was last applied with — tell a drift on the
//! member cluster (`whenToApply: IfNotDrifted`, see [`super::strategy`]) from
//! a change on the hub.
//!
//! One file per Work keeps the cost of recording a change to the size of
//! that Work: a member with a thousand Works used to rewrite (and fsync)
//! every Work's record on each change. A file is replaced atomically (write,
//! fsync, rename, fsync the directory); a ledger from before, one
//! `DIR/ledger.json`, is split into files on load and then removed.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::durable::{sync_dir, write_atomic};
use crate::targets::ResourceId;
use crate::AgentError;

/// One Work's record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The Work generation last applied completely (0: not yet).
    pub generation: i64,
    /// Objects this Work placed.
    pub placed: Vec<ResourceId>,
    /// Whether the Work's last applied spec said `deleteOptions.propagationPolicy:
    /// Abandon`: when the Work is deleted its objects stay on the cluster
    /// (see [`super::forget_work`]). Absent (older ledgers) means `Delete`.
    #[serde(default, rename = "abandonOnDelete", skip_serializing_if = "std::ops::Not::not")]
    pub abandon_on_delete: bool,
    /// The manifest each placed object was last applied with (the baseline
    /// of drift detection). Absent in older ledgers: no drift is then found
    /// until the object is applied again.
    #[serde(default, rename = "lastApplied", skip_serializing_if = "Vec::is_empty")]
    pub last_applied: Vec<LastApplied>,
}

/// What Fleet last wrote to an object: the baselines of drift detection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastApplied {
    /// The object.
    pub id: ResourceId,
    /// The manifest as the Work held it when Fleet last wrote the object
    /// (the baseline under `PartialComparison`).
    pub manifest: serde_json::Value,
    /// The object as the cluster returned it right after the first write of
    /// this manifest, server defaults included (the baseline under
    /// `FullComparison`, so that fields the API server filled in do not
    /// count as drift, while fields added on the member since do, even
    /// after a write that corrected the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<serde_json::Value>,
}

impl Entry {
    /// What Fleet last wrote to `id`, if recorded.
    pub fn last_applied(&self, id: &ResourceId) -> Option<&LastApplied> {
        self.last_applied.iter().find(|l| &l.id == id)
    }
}

impl LastApplied {
    /// The baseline to compare the live object with under `comparison`.
    pub fn baseline(&self, comparison: super::compare::Comparison) -> &serde_json::Value {
        match (&self.written, comparison) {
            (Some(written), super::compare::Comparison::Full) => written,
            _ => &self.manifest,
        }
    }
}

/// All Works' records, in memory as on disk.
#[derive(Debug)]
pub struct Ledger {
    /// `DIR/ledger`: one file per Work.
    dir: PathBuf,
    works: BTreeMap<String, Entry>,
}

/// One Work's file: its name (file names are an encoding of it) and record.
#[derive(Serialize, Deserialize)]
struct Record {
    work: String,
    #[serde(flatten)]
    entry: Entry,
}

/// The ledger of older agents: every Work in one file.
#[derive(Deserialize)]
struct SingleFile {
    works: BTreeMap<String, Entry>,
}

impl Ledger {
    /// Loads the ledger of a data dir (empty if none yet), first splitting
    /// a single-file ledger of an older agent into per-Work files.
    pub fn load(data_dir: &Path) -> Result<Ledger, AgentError> {
        let dir = data_dir.join("ledger");
        fs::create_dir_all(&dir).map_err(|e| AgentError::io(&dir, e))?;
        let mut ledger = Ledger { dir, works: BTreeMap::new() };
        ledger.read_files()?;
        let old = data_dir.join("ledger.json");
        match fs::read(&old) {
            Ok(bytes) => {
                let single: SingleFile = serde_json::from_slice(&bytes).map_err(|e| invalid(&old, e))?;
                // Every record first, durably; only then is the old file
                // removed (a crash in between splits it again, the same way).
                for (work, entry) in single.works {
                    ledger.write_file(&work, &entry)?;
                    ledger.works.insert(work, entry);
                }
                fs::remove_file(&old).map_err(|e| AgentError::io(&old, e))?;
                sync_dir(data_dir)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(AgentError::io(&old, e)),
        }
        Ok(ledger)
    }

    /// The record of a Work.
    pub fn get(&self, work: &str) -> Option<&Entry> {
        self.works.get(work)
    }

    /// Names of every recorded Work.
    pub fn works(&self) -> Vec<String> {
        self.works.keys().cloned().collect()
    }

    /// Records a Work (or forgets it with `None`), durably, if it changed.
    pub fn set(&mut self, work: &str, entry: Option<Entry>) -> Result<(), AgentError> {
        match entry {
            Some(e) if self.works.get(work) != Some(&e) => {
                self.write_file(work, &e)?;
                self.works.insert(work.to_string(), e);
            }
            None if self.works.contains_key(work) => {
                let path = self.path_of(work);
                fs::remove_file(&path).map_err(|e| AgentError::io(&path, e))?;
                sync_dir(&self.dir)?;
                self.works.remove(work);
            }
            _ => {}
        }
        Ok(())
    }

    /// Reads every Work's file; removes what a crash left half-written.
    fn read_files(&mut self) -> Result<(), AgentError> {
        let entries = fs::read_dir(&self.dir).map_err(|e| AgentError::io(&self.dir, e))?;
        for item in entries {
            let path = item.map_err(|e| AgentError::io(&self.dir, e))?.path();
            match path.extension().and_then(|e| e.to_str()) {
                Some("json") => {
                    let bytes = fs::read(&path).map_err(|e| AgentError::io(&path, e))?;
                    let record: Record = serde_json::from_slice(&bytes).map_err(|e| invalid(&path, e))?;
                    self.works.insert(record.work, record.entry);
                }
                Some("tmp") => fs::remove_file(&path).map_err(|e| AgentError::io(&path, e))?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Replaces a Work's file atomically and durably.
    fn write_file(&self, work: &str, entry: &Entry) -> Result<(), AgentError> {
        let path = self.path_of(work);
        // Never an empty record in place of one that failed to encode.
        let record = Record { work: work.to_string(), entry: entry.clone() };
        let bytes = serde_json::to_vec_pretty(&record).map_err(|e| invalid(&path, e))?;
        write_atomic(&path, &bytes, false)
    }

    /// A Work's file, named after it: every byte outside `[a-z0-9.-]` (and
    /// a leading `.`) written as `%XX`; a name that would make a file name
    /// over 200 bytes as `%sha256-` and its digest (which no escaped name
    /// can be). The Work's own name is kept in the file.
    fn path_of(&self, work: &str) -> PathBuf {
        let mut file = String::with_capacity(work.len() + 5);
        for (i, b) in work.bytes().enumerate() {
            let plain = b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || (b == b'.' && i > 0);
            if plain {
                file.push(char::from(b));
            } else {
                file.push_str(&format!("%{b:02X}"));
            }
        }
        if file.len() > 200 {
            file = format!("%sha256-{}", hex::encode(sha2::Sha256::digest(work.as_bytes())));
        }
        file.push_str(".json");
        self.dir.join(file)
    }
}

/// A file that does not hold what it should, as an I/O error naming it.
fn invalid(path: &Path, e: serde_json::Error) -> AgentError {
    AgentError::io(path, std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn survives_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::load(dir.path()).unwrap();
        let id = ResourceId {
            group: "".into(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "n".into(),
            name: "c".into(),
        };
        ledger
            .set(
                "w",
                Some(Entry { generation: 2, placed: vec![id.clone()], abandon_on_delete: true, ..Entry::default() }),
            )
            .unwrap();
        let again = Ledger::load(dir.path()).unwrap();
        assert_eq!(again.get("w").unwrap().placed, vec![id]);
        assert!(again.get("w").unwrap().abandon_on_delete);
        let mut again = again;
        again.set("w", None).unwrap();
        assert!(Ledger::load(dir.path()).unwrap().get("w").is_none());
    }

    #[test]
    fn a_ledger_from_before_delete_options_loads_as_delete_and_delete_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let old = r#"{"works": {"w": {"generation": 3, "placed": [
            {"group": "", "version": "v1", "kind": "ConfigMap", "namespace": "n", "name": "c"}]}}}"#;
        fs::write(dir.path().join("ledger.json"), old).unwrap();
        let mut ledger = Ledger::load(dir.path()).unwrap();
        let entry = ledger.get("w").unwrap().clone();
        assert_eq!((entry.generation, entry.placed.len(), entry.abandon_on_delete), (3, 1, false));
        ledger.set("v", Some(Entry { generation: 1, ..entry.clone() })).unwrap();
        let written = fs::read_to_string(dir.path().join("ledger/v.json")).unwrap();
        assert!(!written.contains("abandonOnDelete"), "{written}");
        ledger.set("v", Some(Entry { abandon_on_delete: true, ..entry })).unwrap();
        let written = fs::read_to_string(dir.path().join("ledger/v.json")).unwrap();
        assert!(written.contains(r#""abandonOnDelete": true"#), "{written}");
    }

    #[test]
    fn a_single_file_ledger_is_split_into_one_file_per_work_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let old = r#"{"works": {"a": {"generation": 1, "placed": []}, "b.x": {"generation": 2, "placed": []}}}"#;
        fs::write(dir.path().join("ledger.json"), old).unwrap();
        let ledger = Ledger::load(dir.path()).unwrap();
        assert_eq!(ledger.works(), vec!["a".to_string(), "b.x".to_string()]);
        assert!(!dir.path().join("ledger.json").exists());
        assert!(dir.path().join("ledger/a.json").exists() && dir.path().join("ledger/b.x.json").exists());
        let again = Ledger::load(dir.path()).unwrap();
        assert_eq!(again.get("b.x").map(|e| e.generation), Some(2));
    }

    #[test]
    fn a_change_rewrites_only_that_work_s_file_and_a_crash_s_leftover_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::load(dir.path()).unwrap();
        ledger.set("a", Some(Entry { generation: 1, ..Entry::default() })).unwrap();
        ledger.set("b", Some(Entry { generation: 1, ..Entry::default() })).unwrap();
        fs::write(dir.path().join("ledger/a.json"), b"not json").unwrap();
        ledger.set("b", Some(Entry { generation: 2, ..Entry::default() })).unwrap();
        // `a` was not rewritten (still what was written over it here).
        assert_eq!(fs::read(dir.path().join("ledger/a.json")).unwrap(), b"not json");
        ledger.set("a", Some(Entry { generation: 3, ..Entry::default() })).unwrap();
        fs::write(dir.path().join("ledger/c.tmp"), b"half").unwrap();
        let again = Ledger::load(dir.path()).unwrap();
        assert_eq!(again.works(), vec!["a".to_string(), "b".to_string()]);
        assert!(!dir.path().join("ledger/c.tmp").exists());
    }

    #[test]
    fn any_work_name_is_one_distinct_safe_file_name() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::load(dir.path()).unwrap();
        let long = "x.".repeat(150);
        let names = ["w", ".", "..", ".w", "%2E", "A/b", "a b", long.as_str(), "h"];
        let files: BTreeSet<PathBuf> = names.iter().map(|n| ledger.path_of(n)).collect();
        assert_eq!(files.len(), names.len());
        for f in &files {
            let name = f.file_name().unwrap().to_str().unwrap();
            assert!(name.len() <= 213 && !name.starts_with('.') && !name.contains('/'), "{name}");
            assert_eq!(f.parent().unwrap(), dir.path().join("ledger"));
        }
        let mut ledger = ledger;
        for n in names {
            ledger.set(n, Some(Entry { generation: 7, ..Entry::default() })).unwrap();
        }
        let again = Ledger::load(dir.path()).unwrap();
        assert_eq!(again.works().len(), names.len());
        assert!(names.iter().all(|n| again.get(n).is_some_and(|e| e.generation == 7)));
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        Ledger::load(dir.path()).unwrap();
        fs::write(dir.path().join("ledger/w.json"), b"{").unwrap();
        let err = Ledger::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("w.json"), "{err}");
    }
}
