//! The audit log file: a thread of its own appends the Events requests
//! hand it through a bounded queue, and rotates the file by size.
//!
//! Durability: the writer flushes its buffer to the file (one `write`
//! call) whenever the queue is empty, so an Event reaches the operating
//! system within moments of its request ending and survives the node's
//! process crashing; it is synced to disk (`fsync`) only at rotation and
//! when the node stops, so a machine crash may lose the last moments. A
//! request never waits for the disk, only for room in the queue
//! ([`QUEUE`] Events) when the disk cannot keep up — the log does not
//! drop Events.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tokio::sync::{mpsc, oneshot};

use crate::error::Error;

/// Events waiting to be written, at most.
pub const QUEUE: usize = 16_384;

/// Where and how the log is written.
#[derive(Debug, Clone)]
pub struct FileOptions {
    pub path: PathBuf,
    /// Rotate when the file would grow past this many bytes (0: never).
    pub max_bytes: u64,
    /// Rotated files kept (`FILE.1` the newest, up to `FILE.<max_backups>`).
    pub max_backups: u32,
}

/// What the writer is handed.
enum Message {
    Line(Vec<u8>),
    /// Flush and fsync what came before, then answer.
    Sync(oneshot::Sender<()>),
}

/// The writer's end of the queue.
#[derive(Clone)]
pub struct Sink {
    sender: mpsc::Sender<Message>,
}

impl Sink {
    /// Queues one line, waiting for room when the queue is full.
    pub async fn send(&self, line: Vec<u8>) {
        if self.sender.send(Message::Line(line)).await.is_err() {
            tracing::error!("the audit log writer has stopped: an Event was not written");
        }
    }

    /// Waits until every line queued before is written and synced to disk.
    pub async fn sync(&self) {
        let (done, synced) = oneshot::channel();
        if self.sender.send(Message::Sync(done)).await.is_ok() {
            let _ = synced.await;
        }
    }
}

/// Opens (appending to) the log and starts its writer thread, which ends
/// when every [`Sink`] is dropped.
pub fn start(options: FileOptions) -> Result<Sink, Error> {
    let file = open(&options.path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let (sender, receiver) = mpsc::channel(QUEUE);
    let writer = Writer { options, out: BufWriter::with_capacity(256 * 1024, file), size };
    std::thread::Builder::new()
        .name("fleet-audit".into())
        .spawn(move || writer.run(receiver))
        .map_err(|e| Error::Config(format!("--audit-log: starting its writer: {e}")))?;
    Ok(Sink { sender })
}

fn open(path: &Path) -> Result<File, Error> {
    OpenOptions::new().create(true).append(true).open(path).map_err(|e| {
        Error::Config(format!("--audit-log: Invalid value: {:?}: cannot open it for appending: {e}", path))
    })
}

struct Writer {
    options: FileOptions,
    out: BufWriter<File>,
    /// Bytes in the current file.
    size: u64,
}

impl Writer {
    fn run(mut self, mut receiver: mpsc::Receiver<Message>) {
        while let Some(message) = receiver.blocking_recv() {
            self.handle(message);
            while let Ok(message) = receiver.try_recv() {
                self.handle(message);
            }
            if let Err(e) = self.out.flush() {
                tracing::error!(path = %self.options.path.display(), "writing the audit log: {e}");
            }
        }
        self.sync();
    }

    fn handle(&mut self, message: Message) {
        match message {
            Message::Line(line) => self.write(&line),
            Message::Sync(done) => {
                self.sync();
                let _ = done.send(());
            }
        }
    }

    fn sync(&mut self) {
        let synced = self.out.flush().and_then(|()| self.out.get_ref().sync_all());
        if let Err(e) = synced {
            tracing::error!(path = %self.options.path.display(), "syncing the audit log: {e}");
        }
    }

    fn write(&mut self, line: &[u8]) {
        let max = self.options.max_bytes;
        if max > 0 && self.size > 0 && self.size + line.len() as u64 > max {
            if let Err(e) = self.rotate() {
                tracing::error!(path = %self.options.path.display(), "rotating the audit log: {e}");
            }
        }
        match self.out.write_all(line) {
            Ok(()) => self.size += line.len() as u64,
            Err(e) => tracing::error!(path = %self.options.path.display(), "writing the audit log: {e}"),
        }
    }

    /// `FILE` becomes `FILE.1`, `FILE.1` becomes `FILE.2`, ...; the oldest
    /// beyond `max_backups` is removed; a new `FILE` is started.
    fn rotate(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        let path = &self.options.path;
        let backup = |n: u32| PathBuf::from(format!("{}.{n}", path.display()));
        let keep = self.options.max_backups;
        if keep == 0 {
            std::fs::remove_file(path)?;
        } else {
            let _ = std::fs::remove_file(backup(keep));
            for n in (1..keep).rev() {
                if backup(n).exists() {
                    std::fs::rename(backup(n), backup(n + 1))?;
                }
            }
            std::fs::rename(path, backup(1))?;
        }
        let file = open(path).map_err(|e| std::io::Error::other(e.to_string()))?;
        self.out = BufWriter::with_capacity(256 * 1024, file);
        self.size = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_log_rotates_by_size_and_keeps_its_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let sink = start(FileOptions { path: path.clone(), max_bytes: 100, max_backups: 2 }).unwrap();
        for i in 0..10 {
            sink.send(format!("{{\"line\":{i:02},\"pad\":\"{}\"}}\n", "x".repeat(20)).into_bytes()).await;
        }
        sink.sync().await;
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        let backup = |n: u32| PathBuf::from(format!("{}.{n}", path.display()));
        // 41-byte lines, 100-byte files: two lines a file, the last two files kept.
        assert!(read(&path).contains("\"line\":09"), "{}", read(&path));
        assert_eq!(read(&path).lines().count(), 2, "{}", read(&path));
        assert!(read(&backup(1)).contains("\"line\":07") && read(&backup(2)).contains("\"line\":05"));
        assert!(!backup(3).exists());
    }
}
