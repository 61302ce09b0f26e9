//! The size of the simulated cluster: nodes, per-node capacity and
//! allocatable, hourly costs and the readiness delay, with the parsers of the
//! `--sim-*` flags.
//!
//! Capacity and allocatable are **per node**, like a Kubernetes node reports
//! them (and like KWOK's fake nodes): the cluster's totals are these times
//! `nodes`. The defaults, 3 nodes of 4 CPUs and 16Gi, make a cluster of 12
//! CPUs and 48Gi, allocatable 11400m CPU and 45Gi.

use std::collections::BTreeMap;
use std::time::Duration;

use fleet_api::quantity::Quantity;
use serde::{Deserialize, Serialize};

use crate::targets::TargetError;

/// Nodes of the simulated cluster when `--sim-nodes` is not given.
pub const DEFAULT_NODES: u32 = 3;
/// Per-node capacity when `--sim-capacity` is not given (`cpu`, `memory`).
pub const DEFAULT_CAPACITY: &[(&str, &str)] = &[("cpu", "4"), ("memory", "16Gi")];
/// Per-node allocatable when neither `--sim-allocatable` nor that resource
/// of `--sim-capacity` is given: capacity less what a kubelet reserves.
pub const DEFAULT_ALLOCATABLE: &[(&str, &str)] = &[("cpu", "3800m"), ("memory", "15Gi")];
/// How long after its latest generation was applied a workload becomes available.
pub const DEFAULT_READY_DELAY: Duration = Duration::from_secs(2);
/// The resources `--sim-capacity` and `--sim-allocatable` accept.
pub const RESOURCE_NAMES: &[&str] = &["cpu", "memory"];
/// The keys `--sim-cost` accepts.
pub const COST_NAMES: &[&str] = &["per-cpu-core", "per-gb-memory"];

/// The simulated cluster's size and behaviour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// Number of nodes (DaemonSets run one pod on each).
    pub nodes: u32,
    /// Capacity of **one node**, `cpu` and `memory`.
    pub capacity: BTreeMap<String, Quantity>,
    /// Allocatable of **one node**, `cpu` and `memory` (at most the capacity).
    pub allocatable: BTreeMap<String, Quantity>,
    /// Hourly costs, `per-cpu-core` and `per-gb-memory` decimal strings;
    /// reported as properties only when present.
    pub cost: BTreeMap<String, String>,
    /// Delay between applying a workload's generation and it becoming available.
    pub ready_delay: Duration,
}

impl Default for SimConfig {
    /// 3 nodes of cpu=4,memory=16Gi (allocatable cpu=3800m,memory=15Gi), no
    /// costs, a 2 s readiness delay.
    fn default() -> SimConfig {
        SimConfig {
            nodes: DEFAULT_NODES,
            capacity: defaults(DEFAULT_CAPACITY),
            allocatable: defaults(DEFAULT_ALLOCATABLE),
            cost: BTreeMap::new(),
            ready_delay: DEFAULT_READY_DELAY,
        }
    }
}

fn defaults(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs.iter().filter_map(|(k, v)| Some((k.to_string(), Quantity::parse(v).ok()?))).collect()
}

impl SimConfig {
    /// Splits `key=value,key=value` (spaces around items allowed; empty text is
    /// no pairs). Errors name `flag`, the bad item and the allowed keys.
    pub fn parse_pairs(flag: &str, text: &str, allowed: &[&str]) -> Result<BTreeMap<String, String>, TargetError> {
        let mut pairs = BTreeMap::new();
        let expected = allowed.iter().map(|k| format!("{k}=VALUE")).collect::<Vec<_>>().join(",");
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(flag_error(flag, item, &format!("not a key=value item; expected {expected}")));
            };
            let (key, value) = (key.trim(), value.trim());
            if !allowed.contains(&key) {
                return Err(flag_error(flag, item, &format!("unknown key {key:?}; allowed: {}", allowed.join(", "))));
            }
            if value.is_empty() {
                return Err(flag_error(flag, item, "the value is empty"));
            }
            if pairs.insert(key.to_string(), value.to_string()).is_some() {
                return Err(flag_error(flag, item, &format!("{key:?} is given twice")));
            }
        }
        Ok(pairs)
    }

    /// Parses `cpu=Q,memory=Q` (either or both) into non-negative quantities.
    pub fn parse_resources(flag: &str, text: &str) -> Result<BTreeMap<String, Quantity>, TargetError> {
        let mut resources = BTreeMap::new();
        for (key, value) in SimConfig::parse_pairs(flag, text, RESOURCE_NAMES)? {
            let item = format!("{key}={value}");
            resources.insert(key, non_negative(flag, &item, &value)?);
        }
        Ok(resources)
    }

    /// Parses `per-cpu-core=F,per-gb-memory=F` (either or both): non-negative
    /// decimals, kept as written.
    pub fn parse_cost(flag: &str, text: &str) -> Result<BTreeMap<String, String>, TargetError> {
        let pairs = SimConfig::parse_pairs(flag, text, COST_NAMES)?;
        for (key, value) in &pairs {
            non_negative(flag, &format!("{key}={value}"), value)?;
        }
        Ok(pairs)
    }

    /// The configuration from the `--sim-*` flags, each optional. Resources
    /// not given keep their defaults; a resource given in `--sim-capacity`
    /// but not in `--sim-allocatable` is fully allocatable.
    pub fn from_flags(
        nodes: Option<u32>,
        capacity: Option<&str>,
        allocatable: Option<&str>,
        cost: Option<&str>,
        ready_delay: Option<Duration>,
    ) -> Result<SimConfig, TargetError> {
        let mut config = SimConfig::default();
        if let Some(nodes) = nodes {
            config.nodes = nodes;
        }
        if let Some(text) = capacity {
            for (key, value) in SimConfig::parse_resources("--sim-capacity", text)? {
                config.allocatable.insert(key.clone(), value);
                config.capacity.insert(key, value);
            }
        }
        if let Some(text) = allocatable {
            config.allocatable.extend(SimConfig::parse_resources("--sim-allocatable", text)?);
        }
        if let Some(text) = cost {
            config.cost = SimConfig::parse_cost("--sim-cost", text)?;
        }
        if let Some(delay) = ready_delay {
            config.ready_delay = delay;
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks that keys are known and allocatable does not exceed capacity.
    pub fn validate(&self) -> Result<(), TargetError> {
        for (flag, map) in [("--sim-capacity", &self.capacity), ("--sim-allocatable", &self.allocatable)] {
            if let Some(key) = map.keys().find(|k| !RESOURCE_NAMES.contains(&k.as_str())) {
                return Err(TargetError::Invalid(format!(
                    "{flag}: unknown resource {key:?}; allowed: {}",
                    RESOURCE_NAMES.join(", ")
                )));
            }
        }
        if let Some(key) = self.cost.keys().find(|k| !COST_NAMES.contains(&k.as_str())) {
            return Err(TargetError::Invalid(format!(
                "--sim-cost: unknown key {key:?}; allowed: {}",
                COST_NAMES.join(", ")
            )));
        }
        for (key, allocatable) in &self.allocatable {
            let capacity = self.capacity.get(key).copied().unwrap_or_default();
            if *allocatable > capacity {
                return Err(TargetError::Invalid(format!(
                    "--sim-allocatable: {key}={allocatable} is more than the capacity {key}={capacity} \
                     (--sim-capacity); allocatable must not exceed capacity"
                )));
            }
        }
        Ok(())
    }

    /// Capacity of the whole cluster: per-node capacity × nodes.
    pub fn cluster_capacity(&self) -> BTreeMap<String, Quantity> {
        times_nodes(&self.capacity, self.nodes)
    }

    /// Allocatable of the whole cluster: per-node allocatable × nodes.
    pub fn cluster_allocatable(&self) -> BTreeMap<String, Quantity> {
        times_nodes(&self.allocatable, self.nodes)
    }
}

fn times_nodes(per_node: &BTreeMap<String, Quantity>, nodes: u32) -> BTreeMap<String, Quantity> {
    per_node.iter().map(|(k, v)| (k.clone(), v.times(i64::from(nodes)))).collect()
}

fn flag_error(flag: &str, item: &str, detail: &str) -> TargetError {
    TargetError::Invalid(format!("invalid {flag} item {item:?}: {detail}"))
}

fn non_negative(flag: &str, item: &str, value: &str) -> Result<Quantity, TargetError> {
    let quantity = Quantity::parse(value).map_err(|e| flag_error(flag, item, &e.to_string()))?;
    if quantity < Quantity::default() {
        return Err(flag_error(flag, item, "must not be negative"));
    }
    Ok(quantity)
}

/// The `--sim-*` flags, for `fleet-agent` to flatten into its arguments.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SimArgs {
    /// Embedded target: number of simulated nodes [default: 3].
    #[arg(long = "sim-nodes", value_name = "N")]
    pub sim_nodes: Option<u32>,
    /// Embedded target: capacity of each simulated node (cluster total = this × nodes),
    /// e.g. cpu=4,memory=16Gi [default: cpu=4,memory=16Gi].
    #[arg(long = "sim-capacity", value_name = "cpu=Q,memory=Q")]
    pub sim_capacity: Option<String>,
    /// Embedded target: allocatable of each simulated node (at most its capacity)
    /// [default: cpu=3800m,memory=15Gi; equal to --sim-capacity for resources given there].
    #[arg(long = "sim-allocatable", value_name = "cpu=Q,memory=Q")]
    pub sim_allocatable: Option<String>,
    /// Embedded target: hourly costs reported as properties, e.g.
    /// per-cpu-core=0.045,per-gb-memory=0.006 [default: none].
    #[arg(long = "sim-cost", value_name = "per-cpu-core=F,per-gb-memory=F")]
    pub sim_cost: Option<String>,
    /// Embedded target: how long after being applied a workload becomes available
    /// (e.g. 500ms, 2s) [default: 2s].
    #[arg(long = "sim-ready-delay", value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub sim_ready_delay: Option<Duration>,
}

impl SimArgs {
    /// The configuration these flags describe.
    pub fn to_config(&self) -> Result<SimConfig, TargetError> {
        SimConfig::from_flags(
            self.sim_nodes,
            self.sim_capacity.as_deref(),
            self.sim_allocatable.as_deref(),
            self.sim_cost.as_deref(),
            self.sim_ready_delay,
        )
    }
}

/// The configuration as written to `config.json` in the store, so that
/// `fleet-agent inspect` simulates status exactly as the running agent does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StoredConfig {
    /// [`SimConfig::nodes`].
    pub nodes: u32,
    /// [`SimConfig::capacity`], quantities as strings.
    pub capacity: BTreeMap<String, String>,
    /// [`SimConfig::allocatable`], quantities as strings.
    pub allocatable: BTreeMap<String, String>,
    /// [`SimConfig::cost`].
    #[serde(default)]
    pub cost: BTreeMap<String, String>,
    /// [`SimConfig::ready_delay`] in milliseconds.
    pub ready_delay_millis: u64,
}

impl From<&SimConfig> for StoredConfig {
    fn from(config: &SimConfig) -> StoredConfig {
        let text = |m: &BTreeMap<String, Quantity>| m.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
        StoredConfig {
            nodes: config.nodes,
            capacity: text(&config.capacity),
            allocatable: text(&config.allocatable),
            cost: config.cost.clone(),
            ready_delay_millis: u64::try_from(config.ready_delay.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl StoredConfig {
    /// Back to a configuration; unreadable quantities fall back to defaults.
    pub fn to_config(&self) -> SimConfig {
        let mut config = SimConfig { nodes: self.nodes, ..SimConfig::default() };
        for (target, source) in [(&mut config.capacity, &self.capacity), (&mut config.allocatable, &self.allocatable)] {
            for (k, v) in source {
                if let Ok(q) = Quantity::parse(v) {
                    target.insert(k.clone(), q);
                }
            }
        }
        config.cost = self.cost.clone();
        config.ready_delay = Duration::from_millis(self.ready_delay_millis);
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn defaults_are_documented_values() {
        let c = SimConfig::default();
        assert_eq!(c.nodes, 3);
        assert_eq!(c.cluster_capacity()["cpu"], q("12"));
        assert_eq!(c.cluster_capacity()["memory"], q("48Gi"));
        assert_eq!(c.cluster_allocatable()["cpu"], q("11400m"));
        assert_eq!(c.cluster_allocatable()["memory"], q("45Gi"));
        assert!(c.cost.is_empty());
        assert_eq!(c.ready_delay, Duration::from_secs(2));
        c.validate().unwrap();
    }

    #[test]
    fn parses_pairs_and_names_the_flag_and_item_in_errors() {
        let r = SimConfig::parse_resources("--sim-capacity", " cpu=8, memory=32Gi ").unwrap();
        assert_eq!(r["cpu"], q("8"));
        assert_eq!(r["memory"], q("32Gi"));
        assert!(SimConfig::parse_resources("--sim-capacity", "").unwrap().is_empty());
        let e = SimConfig::parse_resources("--sim-capacity", "cpu=8,gpu=1").unwrap_err().to_string();
        assert!(e.contains("--sim-capacity") && e.contains("\"gpu=1\"") && e.contains("allowed: cpu, memory"), "{e}");
        let e = SimConfig::parse_resources("--sim-allocatable", "cpu").unwrap_err().to_string();
        assert!(e.contains("--sim-allocatable") && e.contains("cpu=VALUE,memory=VALUE"), "{e}");
        let e = SimConfig::parse_resources("--sim-capacity", "cpu=lots").unwrap_err().to_string();
        assert!(e.contains("\"cpu=lots\"") && e.contains("quantity"), "{e}");
        let e = SimConfig::parse_resources("--sim-capacity", "cpu=-1").unwrap_err().to_string();
        assert!(e.contains("negative"), "{e}");
        let e = SimConfig::parse_resources("--sim-capacity", "cpu=1,cpu=2").unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
        let e = SimConfig::parse_cost("--sim-cost", "per-cpu=1").unwrap_err().to_string();
        assert!(e.contains("--sim-cost") && e.contains("per-cpu-core, per-gb-memory"), "{e}");
        let cost = SimConfig::parse_cost("--sim-cost", "per-cpu-core=0.045").unwrap();
        assert_eq!(cost["per-cpu-core"], "0.045");
    }

    #[test]
    fn from_flags_merges_over_defaults() {
        let c = SimConfig::from_flags(Some(2), Some("cpu=8"), None, Some("per-gb-memory=0.01"), None).unwrap();
        assert_eq!(c.nodes, 2);
        assert_eq!(c.capacity["cpu"], q("8"));
        assert_eq!(c.allocatable["cpu"], q("8"), "a given capacity is fully allocatable");
        assert_eq!(c.capacity["memory"], q("16Gi"));
        assert_eq!(c.allocatable["memory"], q("15Gi"));
        assert_eq!(c.cost["per-gb-memory"], "0.01");
        let c =
            SimConfig::from_flags(None, Some("cpu=8"), Some("cpu=7"), None, Some(Duration::from_millis(5))).unwrap();
        assert_eq!(c.allocatable["cpu"], q("7"));
        assert_eq!(c.ready_delay, Duration::from_millis(5));
        let e = SimConfig::from_flags(None, None, Some("cpu=5"), None, None).unwrap_err().to_string();
        assert!(e.contains("--sim-allocatable") && e.contains("capacity"), "{e}");
    }

    #[test]
    fn sim_args_parse_with_clap() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            sim: SimArgs,
        }
        let cli =
            Cli::try_parse_from(["x", "--sim-nodes", "5", "--sim-capacity", "cpu=2", "--sim-ready-delay", "200ms"])
                .unwrap();
        let c = cli.sim.to_config().unwrap();
        assert_eq!(c.nodes, 5);
        assert_eq!(c.cluster_capacity()["cpu"], q("10"));
        assert_eq!(c.ready_delay, Duration::from_millis(200));
    }

    #[test]
    fn stored_config_round_trips() {
        let c = SimConfig::from_flags(Some(4), None, None, Some("per-cpu-core=0.5"), None).unwrap();
        assert_eq!(StoredConfig::from(&c).to_config(), c);
    }
}
