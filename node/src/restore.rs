//! `fleet-node restore`: prepares a data dir for node N of a new hub from a
//! backup made by `fleetctl snapshot save` (docs/reference/interfaces.md).

use std::path::PathBuf;

use clap::Parser;

use crate::config::parse_peers;
use crate::error::Error;

/// `fleet-node restore` flags.
#[derive(Debug, Parser)]
#[command(
    name = "fleet-node restore",
    about = "Prepare DIR for node N of a new hub from a backup (run it for each node, from the same file; then start \
             every node with its usual flags)"
)]
pub struct RestoreArgs {
    /// The backup file (`fleetctl snapshot save FILE`).
    #[arg(long)]
    pub snapshot: PathBuf,
    /// The new node's data dir (must not hold a node's data yet).
    #[arg(long)]
    pub data_dir: PathBuf,
    /// The new node's id.
    #[arg(long)]
    pub id: u64,
    /// Every node of the new hub, `id=host:port,...` (its membership).
    #[arg(long)]
    pub peers: String,
}

/// Runs the restore; returns a line saying what was restored.
pub fn run(args: RestoreArgs) -> Result<String, Error> {
    if args.id == 0 {
        return Err(Error::Config("--id: Invalid value: 0: must be a positive integer".into()));
    }
    let peers = parse_peers(&args.peers)?;
    let info = fleet_raft::restore::restore_data_dir(&args.snapshot, &args.data_dir, args.id, &peers)
        .map_err(|e| Error::Config(e.to_string()))?;
    Ok(format!(
        "restored {} objects at index {} ({}, {} bytes) into {} for node {} of {}",
        info.objects,
        info.index,
        info.sha256,
        info.bytes,
        args.data_dir.display(),
        args.id,
        args.peers
    ))
}
