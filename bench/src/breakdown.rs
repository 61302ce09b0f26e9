//! `fleet-bench breakdown`: where the time of one write goes. One client
//! writes a ConfigMap at a time, first through the leader and then through
//! a follower; around each run the tool reads every node's
//! `fleet_write_stage_seconds{stage}` histograms from `/metrics` and prints,
//! for each stage and node, how long the stage took on average and how
//! often it ran per write. The client's own mean latency is the total.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;

use crate::cli::BreakdownArgs;
use crate::connect::{fleet_tls, open};
use crate::error::Error;
use crate::payload::Slot;
use crate::writer::Writer;

/// The row of the log file's durable commits (from
/// `fleet_disk_wal_fsync_duration_seconds`), the disk's part of `log_append`.
const LOG_COMMIT: &str = "log_commit (fsync'd)";

/// The stages in the order of a write's path; names as the hub labels them.
const STAGES: [&str; 12] = [
    "handler",
    "admit",
    "queue",
    "forward",
    "commit",
    "log_append",
    LOG_COMMIT,
    "replicate",
    "follower_append",
    "apply_wait_durable",
    "apply",
    "wait_applied",
];

/// Sum (seconds) and count of one stage's histogram on one node.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Tally {
    sum: f64,
    count: f64,
}

/// One node's stage tallies and whether it leads, as scraped.
#[derive(Debug, Default, Clone)]
struct Scrape {
    leads: bool,
    stages: BTreeMap<String, Tally>,
}

/// Reads `fleet_server_is_leader` and the stage histograms out of OpenMetrics text.
fn parse(text: &str) -> Scrape {
    let mut scrape = Scrape::default();
    for line in text.lines() {
        if let Some(value) = line.strip_prefix("fleet_server_is_leader ") {
            scrape.leads = value.trim() == "1";
            continue;
        }
        // The log's durable commits themselves, inside `log_append`.
        if let Some(rest) = line.strip_prefix("fleet_disk_wal_fsync_duration_seconds_") {
            let (field, value) = rest.split_once(' ').unwrap_or_default();
            if let Ok(value) = value.trim().parse::<f64>() {
                let tally = scrape.stages.entry(LOG_COMMIT.to_string()).or_default();
                match field {
                    "sum" => tally.sum = value,
                    "count" => tally.count = value,
                    _ => {}
                }
            }
            continue;
        }
        let Some(rest) = line.strip_prefix("fleet_write_stage_seconds_") else { continue };
        let (field, rest) = match rest.split_once("{stage=\"") {
            Some(split) => split,
            None => continue,
        };
        let Some((stage, value)) = rest.split_once("\"} ") else { continue };
        let Ok(value) = value.split_whitespace().next().unwrap_or_default().parse::<f64>() else { continue };
        let tally = scrape.stages.entry(stage.to_string()).or_default();
        match field {
            "sum" => tally.sum = value,
            "count" => tally.count = value,
            _ => {}
        }
    }
    scrape
}

/// `GET http://addr/metrics` over HTTP/1.1.
async fn scrape(addr: &str) -> Result<Scrape, Error> {
    let failed = |detail: String| Error::Connect { endpoint: format!("http://{addr}/metrics"), detail };
    let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| failed(e.to_string()))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| failed(e.to_string()))?;
    tokio::spawn(connection);
    let request = hyper::Request::get("/metrics")
        .header("host", addr)
        .body(Empty::<Bytes>::new())
        .map_err(|e| failed(e.to_string()))?;
    let response = sender.send_request(request).await.map_err(|e| failed(e.to_string()))?;
    let body = response.into_body().collect().await.map_err(|e| failed(e.to_string()))?.to_bytes();
    Ok(parse(&String::from_utf8_lossy(&body)))
}

async fn scrape_all(addrs: &[String]) -> Result<Vec<Scrape>, Error> {
    let mut out = Vec::with_capacity(addrs.len());
    for addr in addrs {
        out.push(scrape(addr).await?);
    }
    Ok(out)
}

/// One run through one node: its role, the client's mean latency, and every
/// node's stage tallies over the measured writes.
struct Run {
    entry: usize,
    client_mean: Duration,
    deltas: Vec<BTreeMap<String, Tally>>,
}

/// What `breakdown` measured: a run through the leader and one through a follower.
pub struct Breakdown {
    leader: usize,
    writes: u64,
    runs: Vec<Run>,
}

async fn run_through(args: &BreakdownArgs, entry: usize, client: usize) -> Result<Run, Error> {
    let tls = Some(fleet_tls(args.tls_dir.as_deref().ok_or(Error::TlsDirMissing)?)?);
    let channel = open(&args.endpoints[entry], tls, Duration::from_secs(10)).await?;
    let mut writer = Writer::new(crate::cli::Target::Fleet, channel);
    let write = |writer: &mut Writer, seq: u64| {
        let slot = Slot::new(client, seq, 16);
        let mut writer = writer.clone();
        async move { writer.write(slot, args.value_size).await }
    };
    for seq in 0..args.warmup {
        write(&mut writer, seq).await.map_err(|s| Error::Hub(s.to_string()))?;
    }
    let before = scrape_all(&args.metrics).await?;
    let started = Instant::now();
    for seq in args.warmup..args.warmup + args.writes {
        write(&mut writer, seq).await.map_err(|s| Error::Hub(s.to_string()))?;
    }
    let elapsed = started.elapsed();
    let after = scrape_all(&args.metrics).await?;
    let deltas = before
        .iter()
        .zip(&after)
        .map(|(b, a)| {
            a.stages
                .iter()
                .map(|(stage, t)| {
                    let was = b.stages.get(stage).copied().unwrap_or_default();
                    (stage.clone(), Tally { sum: t.sum - was.sum, count: t.count - was.count })
                })
                .collect()
        })
        .collect();
    Ok(Run { entry, client_mean: elapsed / args.writes.max(1) as u32, deltas })
}

/// Runs the breakdown of `args`.
pub async fn run(args: &BreakdownArgs) -> Result<Breakdown, Error> {
    if args.endpoints.len() != args.metrics.len() || args.endpoints.len() < 2 {
        return Err(Error::Invalid {
            flag: "--metrics",
            value: args.metrics.join(","),
            reason: format!(
                "give one metrics address per endpoint, in the same order, for at least 2 nodes ({} endpoints)",
                args.endpoints.len()
            ),
        });
    }
    if args.writes == 0 {
        return Err(Error::Invalid { flag: "--writes", value: "0".into(), reason: "must be at least 1".into() });
    }
    let scrapes = scrape_all(&args.metrics).await?;
    let leader = scrapes.iter().position(|s| s.leads).ok_or_else(|| Error::Hub("no node says it leads".into()))?;
    let follower = (0..args.endpoints.len()).find(|&i| i != leader).unwrap_or_default();
    let mut runs = Vec::new();
    for (client, entry) in [leader, follower].into_iter().enumerate() {
        runs.push(run_through(args, entry, client).await?);
    }
    Ok(Breakdown { leader, writes: args.writes, runs })
}

impl Breakdown {
    /// One markdown table per run: a row per stage, a column per node with
    /// the stage's mean in µs and, in brackets, how many times it ran per write.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for run in &self.runs {
            let role = if run.entry == self.leader { "the leader" } else { "a follower" };
            let _ = writeln!(
                out,
                "\nThrough {role} (node {}): {} writes, one at a time; client mean {:.0} µs.\n",
                run.entry + 1,
                self.writes,
                run.client_mean.as_secs_f64() * 1e6
            );
            let nodes: Vec<String> = (0..run.deltas.len())
                .map(|i| {
                    let what = if i == self.leader { "leader" } else { "follower" };
                    format!("node {} ({what}) µs [per write]", i + 1)
                })
                .collect();
            let _ = writeln!(out, "| stage | {} |", nodes.join(" | "));
            let _ = writeln!(out, "| --- |{}", " ---: |".repeat(nodes.len()));
            for stage in STAGES {
                let cells: Vec<String> = run
                    .deltas
                    .iter()
                    .map(|d| match d.get(stage) {
                        Some(t) if t.count > 0.0 => {
                            format!("{:.0} [{:.2}]", t.sum / t.count * 1e6, t.count / self.writes as f64)
                        }
                        _ => "-".to_string(),
                    })
                    .collect();
                let _ = writeln!(out, "| {stage} | {} |", cells.join(" | "));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_histograms_and_leadership_are_read_from_openmetrics_text() {
        let text = "# HELP fleet_server_is_leader x\n\
                    fleet_server_is_leader 1\n\
                    fleet_write_stage_seconds_sum{stage=\"apply\"} 0.25\n\
                    fleet_write_stage_seconds_count{stage=\"apply\"} 10\n\
                    fleet_write_stage_seconds_bucket{le=\"0.00001\",stage=\"apply\"} 0\n\
                    fleet_write_stage_seconds_sum{stage=\"queue\"} 1e-3\n\
                    fleet_disk_wal_fsync_duration_seconds_sum 0.5\n\
                    fleet_disk_wal_fsync_duration_seconds_count 4\n";
        let scrape = parse(text);
        assert!(scrape.leads);
        assert_eq!(scrape.stages["apply"], Tally { sum: 0.25, count: 10.0 });
        assert_eq!(scrape.stages["queue"], Tally { sum: 0.001, count: 0.0 });
        assert_eq!(scrape.stages[LOG_COMMIT], Tally { sum: 0.5, count: 4.0 });
        assert!(!parse("fleet_server_is_leader 0\n").leads);
    }
}
