//! The load loop: N client tasks, each with one request in flight, an
//! unmeasured warmup, then a measured window of fixed length. A write that
//! completes inside the window counts once, with its latency measured from
//! its first attempt (retries included) to its acknowledgement — what a real
//! client would see.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::cli::Target;
use crate::connect::Connection;
use crate::error::Error;
use crate::payload::Slot;
use crate::writer::{is_retryable, Writer};

/// Pause before sending a write again after `Unavailable`.
const RETRY_PAUSE: Duration = Duration::from_millis(20);
/// Pause after any other error, so a misconfigured run does not spin.
const ERROR_PAUSE: Duration = Duration::from_millis(50);
/// Largest latency the histograms hold exactly (µs); longer ones saturate.
const MAX_LATENCY_MICROS: u64 = 120_000_000;

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The system under test.
    pub target: Target,
    /// Concurrent clients.
    pub clients: usize,
    /// Unmeasured load first.
    pub warmup: Duration,
    /// The measured window.
    pub measure: Duration,
    /// Bytes per value.
    pub value_size: usize,
    /// Keys each client cycles over.
    pub keys_per_client: u64,
}

/// What happened inside the measured window.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Writes acknowledged inside the window.
    pub ops: u64,
    /// Failed attempts inside the window (each retry counts).
    pub errors: u64,
    /// The first error of the whole run (warmup included), if any.
    pub first_error: Option<String>,
    /// Latency of every counted write, in microseconds.
    pub latency: Histogram<u64>,
}

/// An empty latency histogram (µs, 3 significant digits).
pub fn new_histogram() -> Result<Histogram<u64>, Error> {
    Histogram::new_with_bounds(1, MAX_LATENCY_MICROS, 3).map_err(|e| Error::Histogram(e.to_string()))
}

/// The instants that delimit a run.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
}

impl Window {
    fn contains(&self, at: Instant) -> bool {
        at >= self.start && at < self.end
    }
}

/// Runs `plan.clients` clients over `connections` (client `i` uses
/// connection `i % len`) and returns what the measured window saw.
pub async fn run(connections: &[Connection], plan: &Plan) -> Result<Outcome, Error> {
    if connections.is_empty() || plan.clients == 0 {
        return Err(Error::Invalid {
            flag: "--clients",
            value: plan.clients.to_string(),
            reason: "at least one client and one connection are needed".into(),
        });
    }
    let now = Instant::now();
    let window = Window { start: now + plan.warmup, end: now + plan.warmup + plan.measure };
    let mut tasks = Vec::with_capacity(plan.clients);
    for id in 0..plan.clients {
        let writer = Writer::new(plan.target, connections[id % connections.len()].channel.clone());
        tasks.push(tokio::spawn(client(id, writer, plan.clone(), window)));
    }
    let mut total = Outcome { ops: 0, errors: 0, first_error: None, latency: new_histogram()? };
    for task in tasks {
        let part = task.await.map_err(|e| Error::Task(e.to_string()))??;
        total.ops += part.ops;
        total.errors += part.errors;
        if total.first_error.is_none() {
            total.first_error = part.first_error;
        }
        total.latency.add(&part.latency).map_err(|e| Error::Histogram(e.to_string()))?;
    }
    Ok(total)
}

/// One client: writes until the window ends, one request at a time.
async fn client(id: usize, mut writer: Writer, plan: Plan, window: Window) -> Result<Outcome, Error> {
    let mut out = Outcome { ops: 0, errors: 0, first_error: None, latency: new_histogram()? };
    let mut seq = 0u64;
    while Instant::now() < window.end {
        let slot = Slot::new(id, seq, plan.keys_per_client);
        seq += 1;
        let began = Instant::now();
        let acknowledged = loop {
            match writer.write(slot, plan.value_size).await {
                Ok(()) => break true,
                Err(status) => {
                    let at = Instant::now();
                    if window.contains(at) {
                        out.errors += 1;
                    }
                    if out.first_error.is_none() {
                        out.first_error = Some(format!("{:?}: {}", status.code(), status.message()));
                    }
                    if at >= window.end {
                        break false;
                    }
                    let retry = is_retryable(&status);
                    tokio::time::sleep(if retry { RETRY_PAUSE } else { ERROR_PAUSE }).await;
                    if !retry {
                        break false;
                    }
                }
            }
        };
        let done = Instant::now();
        if acknowledged && window.contains(done) {
            out.ops += 1;
            let micros = u64::try_from(done.duration_since(began).as_micros()).unwrap_or(u64::MAX);
            out.latency.saturating_record(micros.max(1));
        }
    }
    Ok(out)
}
