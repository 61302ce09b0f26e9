//! `fleetctl snapshot save FILE`: a consistent backup of the whole hub,
//! streamed to `FILE.part`, its checksum trailer checked, synced, then
//! renamed to FILE — so FILE is always a whole, verified backup.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::cli::SnapshotCommand;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::io::Io;

/// The backup's trailer: SHA-256 of everything before it.
const TRAILER: usize = 32;

/// Runs a `snapshot` subcommand.
pub async fn run(client: &Client, command: SnapshotCommand, io: &mut Io) -> Result<()> {
    match command {
        SnapshotCommand::Save { file } => save(client, &file, io).await,
    }
}

async fn save(client: &Client, file: &Path, io: &mut Io) -> Result<()> {
    let mut part = file.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    let result = stream_to(client, &part).await;
    let (index, objects, bytes, sum) = match result {
        Ok(saved) => saved,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
    };
    std::fs::rename(&part, file).map_err(|e| Error::io(file, e))?;
    io.out(&format!("saved {} objects at index {index} ({bytes} bytes, {sum}) to {}\n", objects, file.display()))
}

/// Streams the backup into `part`, hashing as it goes; checks the trailer
/// and the announced size, then syncs. Returns index, objects, bytes and
/// the checksum.
async fn stream_to(client: &Client, part: &Path) -> Result<(u64, u64, u64, String)> {
    let mut stream = client.save_snapshot().await?;
    let mut out = std::fs::File::create(part).map_err(|e| Error::io(part, e))?;
    let mut hasher = Sha256::new();
    // The last TRAILER bytes seen: the trailer once the stream ends.
    let mut tail: Vec<u8> = Vec::with_capacity(2 * TRAILER);
    let (mut first, mut written) = (None, 0u64);
    while let Some(chunk) = stream.message().await.map_err(|s| Error::from_status(&s))? {
        if first.is_none() {
            first = Some((chunk.index, chunk.objects, chunk.total_bytes, chunk.sha256.clone()));
        }
        out.write_all(&chunk.data).map_err(|e| Error::io(part, e))?;
        written += chunk.data.len() as u64;
        tail.extend_from_slice(&chunk.data);
        if tail.len() > TRAILER {
            let hashed = tail.len() - TRAILER;
            hasher.update(&tail[..hashed]);
            tail.drain(..hashed);
        }
    }
    let (index, objects, total, announced) =
        first.ok_or_else(|| Error::Protocol("the hub sent an empty backup".into()))?;
    let sum = format!("sha256:{}", hex::encode(hasher.finalize()));
    if written != total || tail.len() != TRAILER || hex::encode(&tail) != announced.trim_start_matches("sha256:") {
        return Err(Error::Protocol(format!(
            "the backup arrived damaged or incomplete: {written} of {total} bytes, content {sum}, trailer sha256:{}, \
             announced {announced}",
            hex::encode(&tail)
        )));
    }
    if sum != announced {
        return Err(Error::Protocol(format!(
            "the backup's checksum does not match: content {sum}, announced {announced}"
        )));
    }
    out.sync_all().map_err(|e| Error::io(part, e))?;
    Ok((index, objects, written, sum))
}
