//! `rollout status crp|rp NAME [-n NS] [-w] [--timeout DURATION]`.
//!
//! Exit status: 0 when the placement's `...Available` condition (for a
//! `ReportDiff` placement: `...DiffReported`) is True at its current
//! generation; otherwise an error (exit 1) saying what failed (a cluster's
//! or the placement's `Applied`/`Overridden`/`DiffReported` False, naming
//! the cluster and the first failed object) or what is still pending. With `-w`
//! it waits for one of those, or fails with "timed out waiting ..." after
//! `--timeout`.

use std::time::Duration;

use fleet_api::snapshot::{index_of, snapshot_kinds, IS_LATEST_LABEL, PARENT_PLACEMENT_LABEL, RESOURCE_INDEX_LABEL};
use fleet_api::Object;
use tokio::time::Instant;

use super::split_kind_name;
use crate::cli::{RolloutCommand, RolloutStatusArgs};
use crate::client::Client;
use crate::describe::placement::is_placement_kind;
use crate::error::{Error, Result};
use crate::io::Io;
use crate::kind::KindArg;
use crate::rollout::render::{success_line, verdict_text, PlainPrinter, TerminalBars};
use crate::rollout::{progress, require_latest_index, Outcome, Progress};
use crate::types::{EventType, ListQuery};
use crate::watch::Watcher;

/// Runs a `rollout` subcommand.
pub async fn run(client: &Client, command: RolloutCommand, io: &mut Io) -> Result<()> {
    match command {
        RolloutCommand::Status(args) => status(client, args, io).await,
    }
}

/// Where the progress goes: plain lines through [`Io`], or bars on the terminal.
enum Display {
    Plain(PlainPrinter),
    Terminal(TerminalBars),
}

impl Display {
    fn new(io: &Io) -> Display {
        if io.is_terminal() {
            Display::Terminal(TerminalBars::stdout())
        } else {
            Display::Plain(PlainPrinter::new())
        }
    }

    fn show(&mut self, progress: &Progress, io: &mut Io) -> Result<()> {
        match self {
            Display::Plain(printer) => io.out(&printer.update(progress)),
            Display::Terminal(bars) => {
                bars.update(progress);
                Ok(())
            }
        }
    }

    fn finish(&mut self) {
        if let Display::Terminal(bars) = self {
            bars.finish();
        }
    }
}

/// `rollout status`: once, or with `-w` until decided.
async fn status(client: &Client, args: RolloutStatusArgs, io: &mut Io) -> Result<()> {
    let (kind_name, name) = split_kind_name(&args.kind, args.name.clone())?;
    let name = name.ok_or_else(|| Error::Usage("rollout status needs KIND NAME (crp NAME or rp NAME)".to_string()))?;
    let kind = KindArg::resolve(&kind_name);
    if !is_placement_kind(kind.kind()) {
        return Err(Error::Usage(format!("rollout status works on placements (crp, rp), not {:?}", kind.kind())));
    }
    let namespace = kind.namespace_for(args.namespace.as_deref());
    // Reports a missing placement as the server words it.
    let placement = client.get(&kind, &namespace, &name, false).await?;
    let mut display = Display::new(io);
    if !args.watch {
        let progress = require_latest_index(progress(&placement), latest_resource_index(client, &placement).await);
        display.show(&progress, io)?;
        display.finish();
        return conclude(&progress, io);
    }
    let deadline = Instant::now() + args.timeout;
    let query = ListQuery::new(kind, namespace);
    let (watcher, items) = Watcher::start(client.clone(), query, Some(name.clone())).await?;
    let current = items.into_iter().next().unwrap_or(placement);
    let result = follow(client, watcher, current, deadline, args.timeout, &mut display, io).await;
    display.finish();
    conclude(&result?, io)
}

/// Re-renders on every change of the placement until the rollout is
/// decided (returning its last progress) or `deadline` passes.
async fn follow(
    client: &Client,
    mut watcher: Watcher,
    mut placement: Object,
    deadline: Instant,
    timeout: Duration,
    display: &mut Display,
    io: &mut Io,
) -> Result<Progress> {
    loop {
        let progress = require_latest_index(progress(&placement), latest_resource_index(client, &placement).await);
        display.show(&progress, io)?;
        let pending = match &progress.outcome {
            Outcome::InProgress(why) => why.clone(),
            Outcome::Complete | Outcome::Failed(_) => return Ok(progress),
        };
        let event = match tokio::time::timeout_at(deadline, watcher.next()).await {
            Ok(event) => event?,
            Err(_) => {
                return Err(Error::RolloutIncomplete(format!(
                    "timed out waiting for the rollout of {} after {}: {pending}",
                    progress.placement,
                    humantime::format_duration(timeout),
                )));
            }
        };
        match (event.event_type, event.object) {
            (EventType::Deleted, _) => {
                return Err(Error::RolloutFailed(format!("{} was deleted during its rollout", progress.placement)));
            }
            (_, Some(object)) => placement = object,
            (_, None) => {}
        }
    }
}

/// The index of the placement's newest resource snapshot, if it can be read
/// (a failed read leaves the check to the placement's own status).
async fn latest_resource_index(client: &Client, placement: &Object) -> Option<u64> {
    let (resource_kind, _) = snapshot_kinds(&placement.kind);
    let mut query =
        ListQuery::new(KindArg::resolve(resource_kind), placement.metadata.namespace.clone().unwrap_or_default());
    query.label_selector = format!("{PARENT_PLACEMENT_LABEL}={},{IS_LATEST_LABEL}=true", placement.metadata.name);
    let list = client.list(&query).await.ok()?;
    list.items.iter().filter_map(|s| index_of(s, RESOURCE_INDEX_LABEL)).max()
}

/// Success (printed) when the rollout is complete, else the error saying
/// why not.
fn conclude(progress: &Progress, io: &mut Io) -> Result<()> {
    match (&progress.outcome, verdict_text(progress)) {
        (Outcome::Complete, _) | (_, None) => io.out(&success_line(progress)),
        (Outcome::Failed(_), Some(text)) => Err(Error::RolloutFailed(text)),
        (Outcome::InProgress(_), Some(text)) => Err(Error::RolloutIncomplete(text)),
    }
}
