//! The text of `rollout status`: plain lines when stdout is not a terminal
//! (scripts and tests read them; a watch prints only what changed), and on
//! a terminal an aligned table of clusters above an `indicatif` progress bar,
//! redrawn in place.

use std::collections::BTreeMap;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{ClusterProgress, Outcome, Progress};
use crate::table::Table;

/// `has/latest` resource indexes, `-` for what is not reported.
pub fn resource_index_text(cluster: &ClusterProgress, latest: Option<&str>) -> String {
    format!("{}/{}", cluster.resource_index.as_deref().unwrap_or("-"), latest.unwrap_or("-"))
}

/// `CLUSTER: STAGE (resource index HAS/LATEST)`, then `: DETAIL` when the
/// cluster is not done yet.
pub fn cluster_line(cluster: &ClusterProgress, latest: Option<&str>) -> String {
    let mut line = format!(
        "{}: {} (resource index {})",
        cluster.cluster,
        cluster.stage.as_str(),
        resource_index_text(cluster, latest)
    );
    if !cluster.stage.is_done() && !cluster.detail.is_empty() {
        line.push_str(": ");
        line.push_str(&cluster.detail);
    }
    line
}

/// CLUSTER RESOURCE-INDEX STAGE DETAIL, one row per chosen cluster.
pub fn cluster_table(progress: &Progress) -> Table {
    let mut table = Table::new(["CLUSTER", "RESOURCE-INDEX", "STAGE", "DETAIL"]);
    for cluster in &progress.clusters {
        let detail = if cluster.stage.is_done() { String::new() } else { cluster.detail.clone() };
        table.push(vec![
            cluster.cluster.clone(),
            resource_index_text(cluster, progress.latest_index.as_deref()),
            cluster.stage.as_str().to_string(),
            detail,
        ]);
    }
    table
}

/// The last line of a complete rollout: `KIND "NAME" successfully rolled out
/// (N/M clusters available)`; for `ReportDiff`, `KIND "NAME" successfully
/// reported its diffs (N/M clusters diff reported)`: nothing was rolled out.
pub fn success_line(progress: &Progress) -> String {
    let done = if progress.report_diff { "reported its diffs" } else { "rolled out" };
    format!("{} successfully {done} ({})\n", progress.placement, progress.summary())
}

/// Why `rollout status` fails or waits, as the error says it; `None` when complete.
pub fn verdict_text(progress: &Progress) -> Option<String> {
    match &progress.outcome {
        Outcome::Complete => None,
        Outcome::Failed(why) => Some(format!("rollout of {} failed: {why}", progress.placement)),
        Outcome::InProgress(why) => Some(format!("rollout of {} is not complete: {why}", progress.placement)),
    }
}

/// Plain output: the first update prints a line per cluster and the summary;
/// later ones only the lines that changed (a cluster no longer chosen prints
/// `CLUSTER: no longer chosen`), and nothing when nothing did.
#[derive(Debug, Default)]
pub struct PlainPrinter {
    shown: BTreeMap<String, String>,
    summary: Option<String>,
}

impl PlainPrinter {
    /// A printer that has shown nothing yet.
    pub fn new() -> PlainPrinter {
        PlainPrinter::default()
    }

    /// The text to print for `progress`.
    pub fn update(&mut self, progress: &Progress) -> String {
        let mut text = String::new();
        let mut now = BTreeMap::new();
        for cluster in &progress.clusters {
            let line = cluster_line(cluster, progress.latest_index.as_deref());
            if self.shown.get(&cluster.cluster) != Some(&line) {
                text.push_str(&line);
                text.push('\n');
            }
            now.insert(cluster.cluster.clone(), line);
        }
        for gone in self.shown.keys().filter(|c| !now.contains_key(*c)) {
            text.push_str(&format!("{gone}: no longer chosen\n"));
        }
        self.shown = now;
        let summary = progress.summary();
        if !text.is_empty() || self.summary.as_ref() != Some(&summary) {
            text.push_str(&summary);
            text.push('\n');
            self.summary = Some(summary);
        }
        text
    }
}

/// Terminal output: the cluster table (a line each) above a progress bar of
/// done clusters (available, or diff reported), redrawn in place by `indicatif`.
pub struct TerminalBars {
    multi: MultiProgress,
    header: ProgressBar,
    rows: Vec<(String, ProgressBar)>,
    bar: ProgressBar,
    finished: bool,
}

impl TerminalBars {
    /// Bars drawn on stdout.
    pub fn stdout() -> TerminalBars {
        TerminalBars::with_draw_target(ProgressDrawTarget::stdout())
    }

    /// Bars drawn on `target` (hidden in tests).
    pub fn with_draw_target(target: ProgressDrawTarget) -> TerminalBars {
        let multi = MultiProgress::with_draw_target(target);
        let header = multi.add(ProgressBar::new(0).with_style(message_style()));
        let bar_style = ProgressStyle::with_template("{spinner} [{elapsed}] {bar:40} {pos}/{len} clusters {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        let bar = multi.add(ProgressBar::new(0).with_style(bar_style));
        bar.enable_steady_tick(Duration::from_millis(250));
        TerminalBars { multi, header, rows: Vec::new(), bar, finished: false }
    }

    /// Redraws for `progress`.
    pub fn update(&mut self, progress: &Progress) {
        let table = cluster_table(progress).render();
        let mut lines = table.lines().map(|l| l.trim_end().to_string());
        self.header.set_message(lines.next().unwrap_or_default());
        let lines: Vec<String> = lines.collect();
        let names: Vec<&str> = progress.clusters.iter().map(|c| c.cluster.as_str()).collect();
        if self.rows.iter().map(|(n, _)| n.as_str()).ne(names.iter().copied()) {
            for (_, row) in self.rows.drain(..) {
                row.finish_and_clear();
                self.multi.remove(&row);
            }
            for (name, line) in names.into_iter().zip(&lines) {
                let row = ProgressBar::new(0).with_style(message_style()).with_message(line.clone());
                self.rows.push((name.to_string(), self.multi.insert_before(&self.bar, row)));
            }
        }
        for ((_, row), line) in self.rows.iter().zip(lines) {
            row.set_message(line);
        }
        self.bar.set_message(progress.done_word());
        self.bar.set_length(progress.clusters.len() as u64);
        self.bar.set_position(progress.available() as u64);
    }

    /// Stops redrawing and leaves the last state on the screen (once; later
    /// calls do nothing, so text printed after it stays).
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.header.abandon();
        for (_, row) in &self.rows {
            row.abandon();
        }
        self.bar.abandon();
    }
}

/// A line that is only its message.
fn message_style() -> ProgressStyle {
    ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_bar())
}
