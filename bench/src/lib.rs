//! `fleet-bench`: whole-system write load against a Fleet hub or, for
//! comparison, etcd. N clients each keep one write in flight for a fixed
//! time; the [`report`] gives throughput and latency percentiles.

pub mod breakdown;
pub mod cli;
pub mod connect;
pub mod error;
pub mod kube_compare;
pub mod kube_http;
pub mod load;
pub mod members;
pub mod payload;
pub mod placement_latency;
pub mod rbac_cost;
pub mod report;
pub mod rollout_latency;
pub mod scale;
pub mod staged_latency;
pub mod watching;
pub mod work_latency;
pub mod writer;

/// The subset of etcd's v3 API we drive (`etcdserverpb.KV/Put`), compiled
/// from `proto/etcd_kv.proto`.
pub mod etcdpb {
    tonic::include_proto!("etcdserverpb");
}

use std::time::Duration;

pub use error::Error;

use cli::{ConnectArgs, PutArgs};
use connect::{connect, open};
use load::Plan;
use payload::Slot;
use report::Report;
use writer::Writer;

/// Connects, runs the load of `args`, and summarises it. Fails if not one
/// write succeeded.
pub async fn put(args: &PutArgs) -> Result<Report, Error> {
    if args.clients == 0 {
        return Err(Error::Invalid { flag: "--clients", value: "0".into(), reason: "must be at least 1".into() });
    }
    if args.seconds == 0 {
        return Err(Error::Invalid { flag: "--seconds", value: "0".into(), reason: "must be at least 1".into() });
    }
    let connections = connect(&args.connect).await?;
    let plan = Plan {
        target: args.connect.target,
        clients: args.clients,
        warmup: Duration::from_secs(args.warmup_seconds),
        measure: Duration::from_secs(args.seconds),
        value_size: args.value_size,
        keys_per_client: args.keys_per_client,
    };
    let outcome = load::run(&connections, &plan).await?;
    if outcome.ops == 0 {
        return Err(Error::NothingWritten {
            errors: outcome.errors,
            first_error: outcome.first_error.unwrap_or_else(|| "none (the window was too short)".into()),
        });
    }
    let endpoints = connect::parse_endpoints(&args.connect.endpoints)?;
    Ok(Report::new(&plan, endpoints, connections.len(), &outcome))
}

/// Writes one small object through each endpoint; returns the endpoints
/// that acknowledged, or the first that did not.
pub async fn probe(args: &ConnectArgs) -> Result<Vec<String>, Error> {
    let endpoints = connect::parse_endpoints(&args.endpoints)?;
    let tls = connect::tls_of(args)?;
    let timeout = Duration::from_secs(args.request_timeout_seconds.max(1));
    for endpoint in &endpoints {
        let channel = open(endpoint, tls.clone(), timeout).await?;
        let mut writer = Writer::new(args.target, channel);
        writer.write(Slot::new(0, 0, 1), 16).await.map_err(|s| Error::Probe {
            endpoint: endpoint.clone(),
            status: format!("{:?}: {}", s.code(), s.message()),
        })?;
    }
    Ok(endpoints)
}
