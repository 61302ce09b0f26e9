//! openraft's storage conformance suite against the real write-ahead log
//! store and redb state machine, on real files in a temp dir.

use fleet_raft::LogStore;
use fleet_statemachine::{StateMachine, TypeConfig};
use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;

struct DiskBuilder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for DiskBuilder {
    async fn build(&self) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<u64>> {
        let dir = tempfile::tempdir()
            .map_err(|e| StorageError::from_io_error(openraft::ErrorSubject::Store, openraft::ErrorVerb::Write, e))?;
        let log = LogStore::open(&dir.path().join("raft-wal")).map_err(|e| {
            StorageError::from_io_error(
                openraft::ErrorSubject::Logs,
                openraft::ErrorVerb::Write,
                std::io::Error::other(e.to_string()),
            )
        })?;
        let sm = StateMachine::open(&dir.path().join("state")).map_err(|e| {
            StorageError::from_io_error(
                openraft::ErrorSubject::StateMachine,
                openraft::ErrorVerb::Write,
                std::io::Error::other(e.to_string()),
            )
        })?;
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite_passes_on_disk() {
    if let Err(e) = Suite::test_all(DiskBuilder) {
        panic!("openraft storage suite failed: {e}");
    }
}
