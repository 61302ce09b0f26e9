//! What the agent placed for each Work, kept durably in `DIR/ledger.json`:
//! the generation it applied and the objects it created. It lets the agent
//! delete exactly what a Work no longer holds (and only what Fleet created),
//! skip re-applying unchanged Work after a restart, and — with the manifest
//! each object was last applied with — tell a drift on the member cluster
//! (`whenToApply: IfNotDrifted`, see [`super::strategy`]) from a change on the hub.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::target::ResourceId;
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
    /// The object as the cluster returned it right after that write, server
    /// defaults included (the baseline under `FullComparison`, so that
    /// fields the API server filled in do not count as drift).
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

/// All Works' records.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Ledger {
    #[serde(skip)]
    path: PathBuf,
    works: BTreeMap<String, Entry>,
}

impl Ledger {
    /// Loads the ledger of a data dir (empty if none yet).
    pub fn load(data_dir: &Path) -> Result<Ledger, AgentError> {
        let path = data_dir.join("ledger.json");
        let mut ledger: Ledger = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| AgentError::io(&path, std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ledger::default(),
            Err(e) => return Err(AgentError::io(&path, e)),
        };
        ledger.path = path;
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
        let changed = match &entry {
            Some(e) => self.works.get(work) != Some(e),
            None => self.works.contains_key(work),
        };
        if !changed {
            return Ok(());
        }
        match entry {
            Some(e) => self.works.insert(work.to_string(), e),
            None => self.works.remove(work),
        };
        self.save()
    }

    fn save(&self) -> Result<(), AgentError> {
        let tmp = self.path.with_extension("tmp");
        // Never an empty ledger in place of one that failed to encode.
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| AgentError::io(&tmp, std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        {
            let mut f = fs::File::create(&tmp).map_err(|e| AgentError::io(&tmp, e))?;
            f.write_all(&bytes).and_then(|()| f.sync_all()).map_err(|e| AgentError::io(&tmp, e))?;
        }
        fs::rename(&tmp, &self.path).map_err(|e| AgentError::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
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
        let written = fs::read_to_string(dir.path().join("ledger.json")).unwrap();
        assert!(!written.contains("abandonOnDelete"), "{written}");
        ledger.set("v", Some(Entry { abandon_on_delete: true, ..entry })).unwrap();
        let written = fs::read_to_string(dir.path().join("ledger.json")).unwrap();
        assert!(written.contains(r#""abandonOnDelete": true"#), "{written}");
    }
}
