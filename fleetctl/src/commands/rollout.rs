//! `rollout status crp|rp NAME [-n NS] [-w] [--timeout DURATION]`.
//!
//! An External placement is rolled out by staged update runs: its status
//! follows the newest run naming it (the run's line says which stage it is
//! in and what it waits for), and it completes once that run succeeded and
//! every cluster is Available at the run's resource index.
//!
//! Exit status: 0 when the placement's `...Available` condition (for a
//! `ReportDiff` placement: `...DiffReported`) is True at its current
//! generation; otherwise an error (exit 1) saying what failed (a cluster's
//! or the placement's `Applied`/`Overridden`/`DiffReported` False, naming
//! the cluster and the first failed object) or what is still pending. With `-w`
//! it waits for one of those, or fails with "timed out waiting ..." after
//! `--timeout`.

use std::time::{Duration, SystemTime};

use fleet_api::placement::{EXTERNAL, RESOURCE_PLACEMENT};
use fleet_api::snapshot::{index_of, snapshot_kinds, IS_LATEST_LABEL, PARENT_PLACEMENT_LABEL, RESOURCE_INDEX_LABEL};
use fleet_api::staged::{run_spec_of, CLUSTER_STAGED_UPDATE_RUN, STAGED_UPDATE_RUN};
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
use crate::rollout::{follow_run, progress, require_latest_index, Outcome, Progress};
use crate::staged::run_progress;
use crate::types::{EventType, ListQuery};
use crate::watch::Watcher;
use fleet_api::time::system_time;

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
    // An External placement's runs are followed too (their last write may
    // come after the placement's).
    let runs = match is_external(&placement) {
        true => {
            Some(Watcher::start(client.clone(), ListQuery::new(run_kind(&placement), namespace.clone()), None).await?)
        }
        false => None,
    };
    if !args.watch {
        let runs: Option<Vec<Object>> = runs.map(|(_, items)| items);
        let progress = current_progress(client, &placement, runs.as_deref()).await;
        display.show(&progress, io)?;
        display.finish();
        return conclude(&progress, io);
    }
    let deadline = Instant::now() + args.timeout;
    let query = ListQuery::new(kind, namespace);
    let (watcher, items) = Watcher::start(client.clone(), query, Some(name.clone())).await?;
    let current = items.into_iter().next().unwrap_or(placement);
    let followed = Followed { placement: current, runs };
    let result = follow(client, watcher, followed, deadline, args.timeout, &mut display, io).await;
    display.finish();
    conclude(&result?, io)
}

/// What `rollout status -w` follows: the placement, and for an External
/// placement the runs of its namespace (with their watcher).
struct Followed {
    placement: Object,
    runs: Option<(Watcher, Vec<Object>)>,
}

/// Whether the placement's rollout is handed to staged update runs.
fn is_external(placement: &Object) -> bool {
    fleet_api::placement::spec_of(placement).strategy.and_then(|s| s.type_).as_deref() == Some(EXTERNAL)
}

/// The run kind serving a placement kind.
fn run_kind(placement: &Object) -> KindArg {
    let kind = if placement.kind == RESOURCE_PLACEMENT { STAGED_UPDATE_RUN } else { CLUSTER_STAGED_UPDATE_RUN };
    KindArg::resolve(kind)
}

/// The progress now: for a rolling update against the newest resource
/// snapshot, for an External placement through its newest run.
async fn current_progress(client: &Client, placement: &Object, runs: Option<&[Object]>) -> Progress {
    match runs {
        None => require_latest_index(progress(placement), latest_resource_index(client, placement).await),
        Some(runs) => {
            let run = newest_run(placement, runs).map(|r| run_progress(r, SystemTime::now()));
            follow_run(progress(placement), run.as_ref())
        }
    }
}

/// The newest run naming `placement`: by creation time (whole seconds),
/// then by last write (a run created later in the same second was written
/// after an older one finished), then by name.
fn newest_run<'a>(placement: &Object, runs: &'a [Object]) -> Option<&'a Object> {
    let created = |o: &Object| o.metadata.creation_timestamp.as_deref().and_then(system_time);
    let written = |o: &Object| o.metadata.resource_version_number().unwrap_or(0);
    runs.iter().filter(|r| run_spec_of(r).placement_name == placement.metadata.name).max_by(|a, b| {
        (created(a), written(a)).cmp(&(created(b), written(b))).then_with(|| a.metadata.name.cmp(&b.metadata.name))
    })
}

/// Re-renders on every change of the placement (and of its runs) until the
/// rollout is decided (returning its last progress) or `deadline` passes.
async fn follow(
    client: &Client,
    mut watcher: Watcher,
    mut followed: Followed,
    deadline: Instant,
    timeout: Duration,
    display: &mut Display,
    io: &mut Io,
) -> Result<Progress> {
    loop {
        let runs = followed.runs.as_ref().map(|(_, items)| items.as_slice());
        let progress = current_progress(client, &followed.placement, runs).await;
        display.show(&progress, io)?;
        let pending = match &progress.outcome {
            Outcome::InProgress(why) => why.clone(),
            Outcome::Complete | Outcome::Failed(_) => return Ok(progress),
        };
        let timed_out = || {
            Error::RolloutIncomplete(format!(
                "timed out waiting for the rollout of {} after {}: {pending}",
                progress.placement,
                humantime::format_duration(timeout),
            ))
        };
        // A timed wait's time left changes without any event: redraw every second.
        let tick = Instant::now() + Duration::from_secs(1);
        let counting_down = shows_a_timer(&progress);
        let run_event = async {
            match followed.runs.as_mut() {
                Some((runs, _)) if counting_down => tokio::time::timeout_at(tick, runs.next()).await.ok(),
                Some((runs, _)) => Some(runs.next().await),
                None => std::future::pending().await,
            }
        };
        let woke = tokio::select! {
            event = tokio::time::timeout_at(deadline, watcher.next()) => Woke::Placement(event.ok()),
            event = run_event => Woke::Run(event),
        };
        match woke {
            Woke::Placement(None) => return Err(timed_out()),
            Woke::Placement(Some(event)) => {
                let event = event?;
                match (event.event_type, event.object) {
                    (EventType::Deleted, _) => {
                        let text = format!("{} was deleted during its rollout", progress.placement);
                        return Err(Error::RolloutFailed(text));
                    }
                    (_, Some(object)) => followed.placement = object,
                    (_, None) => {}
                }
            }
            Woke::Run(_) if Instant::now() >= deadline => return Err(timed_out()),
            Woke::Run(None) => {}
            Woke::Run(Some(event)) => {
                let event = event?;
                if let Some((_, items)) = followed.runs.as_mut() {
                    apply_event(items, event);
                }
            }
        }
    }
}

/// What ended one wait of `follow`.
enum Woke {
    /// The placement changed (`None`: the deadline passed).
    Placement(Option<Result<crate::types::WatchEvent>>),
    /// A run changed (`None`: a second passed while a timer counts down).
    Run(Option<Result<crate::types::WatchEvent>>),
}

/// Whether the run line shows a timer counting down.
fn shows_a_timer(progress: &Progress) -> bool {
    progress.run.as_deref().is_some_and(|r| r.contains(" left"))
}

/// Keeps `items` (the runs listed) current with one watch event.
fn apply_event(items: &mut Vec<Object>, event: crate::types::WatchEvent) {
    let Some(object) = event.object else { return };
    items.retain(|o| o.metadata.name != object.metadata.name);
    if event.event_type != EventType::Deleted {
        items.push(object);
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
