//! Errors of the storage layer itself (I/O, corruption), as opposed to the
//! deterministic, per-command [`crate::StoreError`]s that are part of the
//! replicated state.

/// A storage failure: the node cannot go on safely with this store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// redb failed (I/O, corruption, ...).
    #[error("state machine storage: {0}")]
    Storage(String),
    /// A stored record could not be decoded.
    #[error("state machine record {what} cannot be decoded: {detail}")]
    Decode { what: String, detail: String },
    /// The file was written by a newer version of Fleet.
    #[error(
        "{path} has on-disk format version {found}, newer than the version {supported} this fleet-node reads: \
         run the fleet-node version that wrote it (downgrading a data dir is not supported)"
    )]
    NewerFormat { path: String, found: u32, supported: u32 },
    /// A snapshot could not be read or written.
    #[error("snapshot: {0}")]
    Snapshot(String),
}

/// Converts every redb error type into `$error::Storage(message)`, so `?`
/// works on any redb call. Exported because the Raft log store keeps a redb
/// file too and its error enum needs the same list; one list, kept here
/// next to the redb version the state machine pins.
#[macro_export]
macro_rules! redb_errors_as_storage {
    ($error:ty) => {
        $crate::redb_errors_as_storage!(@each $error;
            ::redb::Error,
            ::redb::DatabaseError,
            ::redb::TransactionError,
            ::redb::TableError,
            ::redb::StorageError,
            ::redb::CommitError,
            ::redb::SetDurabilityError
        );
    };
    (@each $error:ty; $($t:ty),*) => {$(
        impl From<$t> for $error {
            fn from(e: $t) -> Self {
                Self::Storage(e.to_string())
            }
        }
    )*};
}
redb_errors_as_storage!(Error);

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Snapshot(e.to_string())
    }
}
