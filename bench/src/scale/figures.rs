//! The figures of a scale scenario: each run gives named numbers; the
//! report gives, per figure, the median and the spread (min, max) over the
//! runs, as a table or one JSON object.

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// The named numbers one run of a scenario measured.
pub type RunFigures = BTreeMap<String, f64>;

/// Every run of one scenario.
#[derive(Debug, Clone, Default)]
pub struct ScenarioReport {
    /// The scenario's name.
    pub scenario: String,
    /// Member clusters the scenario ran against.
    pub clusters: usize,
    /// What each run measured.
    pub runs: Vec<RunFigures>,
}

/// Median, min and max of some values (`None` when there are none).
pub fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    Some((median, sorted[0], sorted[n - 1]))
}

/// The `q` quantile (0..=1) of some durations in ms, nearest-rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

impl ScenarioReport {
    fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.runs.iter().flat_map(|r| r.keys().map(String::as_str)).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    fn values(&self, name: &str) -> Vec<f64> {
        self.runs.iter().filter_map(|r| r.get(name).copied()).collect()
    }

    /// A markdown table: one row per figure.
    pub fn text(&self) -> String {
        let mut out = format!(
            "scenario {} on {} clusters, {} run(s)\n\n| figure | median | min | max |\n| --- | ---: | ---: | ---: |\n",
            self.scenario,
            self.clusters,
            self.runs.len()
        );
        for name in self.names() {
            if let Some((median, min, max)) = spread(&self.values(name)) {
                out.push_str(&format!("| {name} | {median:.1} | {min:.1} | {max:.1} |\n"));
            }
        }
        out
    }

    /// One JSON object: the runs and, per figure, median/min/max.
    pub fn json(&self) -> Value {
        let summary: serde_json::Map<String, Value> = self
            .names()
            .into_iter()
            .filter_map(|name| {
                spread(&self.values(name))
                    .map(|(median, min, max)| (name.to_string(), json!({"median": median, "min": min, "max": max})))
            })
            .collect();
        json!({"scenario": self.scenario, "clusters": self.clusters, "runs": self.runs, "summary": summary})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_and_quantiles() {
        assert_eq!(spread(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(spread(&[4.0, 1.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(spread(&[]), None);
        let sorted: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(quantile(&sorted, 0.9), 9.0);
        assert_eq!(quantile(&sorted, 0.5), 5.0);
        assert_eq!(quantile(&sorted, 1.0), 10.0);
        let report = ScenarioReport {
            scenario: "pick-n".into(),
            clusters: 10,
            runs: vec![[("p90_ms".to_string(), 5.0)].into(), [("p90_ms".to_string(), 7.0)].into()],
        };
        assert!(report.text().contains("| p90_ms | 6.0 | 5.0 | 7.0 |"), "{}", report.text());
        assert_eq!(report.json()["summary"]["p90_ms"]["median"], 6.0);
    }
}
