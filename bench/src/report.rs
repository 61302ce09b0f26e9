//! The result of a run, as text for people or one JSON object for scripts.

use serde::Serialize;

use crate::error::Error;
use crate::load::{Outcome, Plan};

/// Throughput and latency of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `fleet` or `etcd`.
    pub target: String,
    /// Endpoints the clients were spread over.
    pub endpoints: Vec<String>,
    /// Concurrent clients.
    pub clients: usize,
    /// HTTP/2 connections the clients shared.
    pub connections: usize,
    /// Bytes per value.
    pub value_size: usize,
    /// Length of the measured window.
    pub seconds: f64,
    /// Writes acknowledged in the window.
    pub ops: u64,
    /// `ops / seconds`.
    pub ops_per_sec: f64,
    /// Failed attempts in the window.
    pub errors: u64,
    /// Latency percentiles and extremes, in milliseconds.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Slowest counted write.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// The first error of the run, if any.
    pub first_error: Option<String>,
}

/// Microseconds to milliseconds, keeping microsecond precision.
fn ms(micros: f64) -> f64 {
    micros.round() / 1000.0
}

impl Report {
    /// Summarises an outcome of `plan` over these endpoints and connections.
    pub fn new(plan: &Plan, endpoints: Vec<String>, connections: usize, outcome: &Outcome) -> Report {
        let seconds = plan.measure.as_secs_f64();
        let h = &outcome.latency;
        let q = |quantile: f64| ms(h.value_at_quantile(quantile) as f64);
        Report {
            target: plan.target.name().to_string(),
            endpoints,
            clients: plan.clients,
            connections,
            value_size: plan.value_size,
            seconds,
            ops: outcome.ops,
            ops_per_sec: if seconds > 0.0 { (outcome.ops as f64 / seconds * 10.0).round() / 10.0 } else { 0.0 },
            errors: outcome.errors,
            p50_ms: q(0.50),
            p90_ms: q(0.90),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: ms(h.max() as f64),
            mean_ms: ms(h.mean()),
            first_error: outcome.first_error.clone(),
        }
    }

    /// A few aligned lines.
    pub fn text(&self) -> String {
        let mut out = format!(
            "target     {} ({} endpoints, {} clients over {} connections, {}-byte values)\n",
            self.target,
            self.endpoints.len(),
            self.clients,
            self.connections,
            self.value_size
        );
        out.push_str(&format!(
            "throughput {:.1} writes/s ({} writes in {:.1} s)\n",
            self.ops_per_sec, self.ops, self.seconds
        ));
        out.push_str(&format!(
            "latency    p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  p99.9 {:.2} ms  max {:.2} ms  mean {:.2} ms\n",
            self.p50_ms, self.p90_ms, self.p99_ms, self.p999_ms, self.max_ms, self.mean_ms
        ));
        out.push_str(&format!("errors     {}", self.errors));
        if let Some(first) = &self.first_error {
            out.push_str(&format!(" (first: {first})"));
        }
        out.push('\n');
        out
    }

    /// One JSON object on one line.
    pub fn json(&self) -> Result<String, Error> {
        Ok(serde_json::to_string(self)?)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cli::Target;
    use crate::load::new_histogram;

    #[test]
    fn reports_percentiles_in_milliseconds() {
        let mut latency = new_histogram().unwrap();
        for micros in 1..=1000u64 {
            latency.record(micros * 100).unwrap();
        }
        let outcome = Outcome { ops: 1000, errors: 2, first_error: Some("Unavailable: x".into()), latency };
        let plan = Plan {
            target: Target::Etcd,
            clients: 4,
            warmup: Duration::ZERO,
            measure: Duration::from_secs(10),
            value_size: 1024,
            keys_per_client: 10,
        };
        let report = Report::new(&plan, vec!["127.0.0.1:2379".into()], 1, &outcome);
        assert_eq!(report.ops_per_sec, 100.0);
        assert!((report.p50_ms - 50.0).abs() < 0.1, "{}", report.p50_ms);
        assert!((report.p99_ms - 99.0).abs() < 0.1, "{}", report.p99_ms);
        let json: serde_json::Value = serde_json::from_str(&report.json().unwrap()).unwrap();
        assert_eq!(json["target"], "etcd");
        assert_eq!(json["errors"], 2);
        assert!(report.text().contains("100.0 writes/s"));
    }
}
