//! Files the agent must not lose or find half-written after a crash (its
//! identity, its ledger): written to a temporary file, fsynced, renamed
//! over the old one, and the directory fsynced.

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::AgentError;

/// Writes `path` atomically and durably by way of `path` with the
/// extension `tmp`; `private` makes it owner-only.
pub(crate) fn write_atomic(path: &Path, contents: &[u8], private: bool) -> Result<(), AgentError> {
    let tmp = path.with_extension("tmp");
    {
        let mut options = fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        if private {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        #[cfg(not(unix))]
        let _ = private;
        let mut f = options.open(&tmp).map_err(|e| AgentError::io(&tmp, e))?;
        f.write_all(contents).and_then(|()| f.sync_all()).map_err(|e| AgentError::io(&tmp, e))?;
    }
    fs::rename(&tmp, path).map_err(|e| AgentError::io(path, e))?;
    match path.parent() {
        Some(dir) => sync_dir(dir),
        None => Ok(()),
    }
}

/// Makes a directory's entries (a renamed or removed file) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), AgentError> {
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| AgentError::io(dir, e))
}
