//! `fleet-node restore`: a new node's data dir made from a backup, so that
//! a new hub starts with exactly the backup's objects under its own
//! membership (see `fleet_statemachine::backup`).

use std::collections::BTreeMap;
use std::path::Path;

use fleet_statemachine::backup::{read_backup_file, restore_backup, BackupInfo};
use fleet_statemachine::StateMachine;

use crate::consensus::{LOG_DIR, STATE_DIR};
use crate::error::Error;

/// Prepares `data_dir` (which must not hold a node's data yet) for node
/// `id` of a new hub of `members` (id → address) from the backup at
/// `snapshot`. The Raft log starts empty: the node resumes after the
/// backup's index on its first start.
pub fn restore_data_dir(
    snapshot: &Path,
    data_dir: &Path,
    id: u64,
    members: &BTreeMap<u64, String>,
) -> Result<BackupInfo, Error> {
    if !members.contains_key(&id) {
        return Err(Error::Invalid(format!(
            "--peers: must include this node ({id}), got {:?}",
            members.iter().map(|(i, a)| format!("{i}={a}")).collect::<Vec<_>>().join(",")
        )));
    }
    for existing in [data_dir.join(LOG_DIR), data_dir.join("raft-log.redb"), data_dir.join(STATE_DIR)] {
        if existing.exists() {
            return Err(Error::Invalid(format!(
                "--data-dir {}: already holds a node's data ({}): restore into a new, empty directory",
                data_dir.display(),
                existing.display()
            )));
        }
    }
    let bytes = read_backup_file(snapshot).map_err(|e| Error::Invalid(format!("--snapshot: {e}")))?;
    let verified = fleet_statemachine::backup::verify_backup(&bytes)
        .map_err(|e| Error::Invalid(format!("--snapshot {}: {e}", snapshot.display())))?;
    std::fs::create_dir_all(data_dir).map_err(|e| Error::Storage(format!("{}: {e}", data_dir.display())))?;
    let sm = StateMachine::open(&data_dir.join(STATE_DIR)).map_err(|e| Error::Storage(e.to_string()))?;
    let restored = restore_backup(&sm.store(), &bytes, members).map_err(|e| Error::Storage(e.to_string()))?;
    debug_assert_eq!(restored, verified);
    Ok(restored)
}
