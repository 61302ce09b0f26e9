//! `fleet-bench rbac-cost`: what authorization costs end to end. The same
//! write load (`Fleet.Apply` of ConfigMaps) and list load (`Fleet.List` of
//! the namespace's ConfigMaps) run twice against the same hub in one
//! invocation: as `admin` (group `system:masters`, allowed by the first
//! binding the evaluator reads) and as a user bound to the `edit`
//! ClusterRole in the benchmark namespace among `--other-bindings`
//! RoleBindings of other users; the report gives both and the ratio.
//!
//! Both users go through the same code (RBAC is never off); the difference
//! is what deciding a tenant's request costs over the cheapest decision.
//! The user's requests are also subject to the hub's per-user seats
//! (`fleet-node --max-requests-per-user`, 8 by default): keep `--clients`
//! at or below it, or the run measures queueing instead.

use std::path::Path;
use std::time::{Duration, Instant};

use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, KindRef, ListRequest};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use crate::cli::{RbacCostArgs, Target};
use crate::connect::{open, parse_endpoints, Connection, MAX_MESSAGE};
use crate::error::Error;
use crate::load::{new_histogram, Plan};
use crate::writer::NAMESPACE;

/// What one user's load did, summed over the rounds.
struct Tally {
    ops: u64,
    errors: u64,
    seconds: f64,
    latency: hdrhistogram::Histogram<u64>,
}

impl Tally {
    fn new() -> Result<Tally, Error> {
        Ok(Tally { ops: 0, errors: 0, seconds: 0.0, latency: new_histogram()? })
    }

    fn add(
        &mut self,
        ops: u64,
        errors: u64,
        seconds: f64,
        latency: &hdrhistogram::Histogram<u64>,
    ) -> Result<(), Error> {
        self.ops += ops;
        self.errors += errors;
        self.seconds += seconds;
        self.latency.add(latency).map_err(|e| Error::Histogram(e.to_string()))
    }

    fn measure(&self) -> Measure {
        Measure {
            per_second: if self.seconds > 0.0 { self.ops as f64 / self.seconds } else { 0.0 },
            p50_ms: self.latency.value_at_quantile(0.5) as f64 / 1000.0,
            p99_ms: self.latency.value_at_quantile(0.99) as f64 / 1000.0,
            errors: self.errors,
        }
    }
}

/// One load, as one user saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
}

/// Writes and lists, as admin and as the tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    pub write_admin: Measure,
    pub write_user: Measure,
    pub list_admin: Measure,
    pub list_user: Measure,
    pub clients: usize,
    pub other_bindings: usize,
    pub listed: u64,
    pub rounds: usize,
    /// Tenant/admin write throughput of each round: the users run one
    /// after the other within a round, so the machine's drift over a long
    /// run cancels out of each round's ratio.
    pub write_ratios: Vec<f64>,
    /// The same for lists.
    pub list_ratios: Vec<f64>,
}

/// The median and the extremes of `ratios` (zeros when there are none).
fn spread(ratios: &[f64]) -> (f64, f64, f64) {
    let mut sorted: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    match (sorted.first(), sorted.last()) {
        (Some(&min), Some(&max)) => {
            let mid = sorted.len() / 2;
            let median = if sorted.len() % 2 == 1 { sorted[mid] } else { (sorted[mid - 1] + sorted[mid]) / 2.0 };
            (median, min, max)
        }
        _ => (0.0, 0.0, 0.0),
    }
}

impl Cost {
    /// The report, with user/admin ratios.
    pub fn text(&self) -> String {
        let row = |what: &str, m: &Measure| {
            format!(
                "  {what:<8} {:>9.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  errors {}\n",
                m.per_second, m.p50_ms, m.p99_ms, m.errors
            )
        };
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let mut out = format!(
            "RBAC cost, {} clients, tenant bound to edit among {} other RoleBindings, {} rounds\n",
            self.clients, self.other_bindings, self.rounds
        );
        out += "writes (Apply of one ConfigMap):\n";
        out += &row("admin", &self.write_admin);
        out += &row("tenant", &self.write_user);
        out += &format!(
            "  tenant/admin throughput x{:.3}  p50 x{:.3}\n",
            ratio(self.write_user.per_second, self.write_admin.per_second),
            ratio(self.write_user.p50_ms, self.write_admin.p50_ms)
        );
        out += &per_round(&self.write_ratios);
        out += &format!("lists (List of the namespace's {} ConfigMaps):\n", self.listed);
        out += &row("admin", &self.list_admin);
        out += &row("tenant", &self.list_user);
        out += &format!(
            "  tenant/admin throughput x{:.3}  p50 x{:.3}\n",
            ratio(self.list_user.per_second, self.list_admin.per_second),
            ratio(self.list_user.p50_ms, self.list_admin.p50_ms)
        );
        out += &per_round(&self.list_ratios);
        out
    }
}

/// The line giving the per-round ratios' median and extremes.
fn per_round(ratios: &[f64]) -> String {
    let (median, min, max) = spread(ratios);
    format!("  per round: median x{median:.3}, min x{min:.3}, max x{max:.3} ({} rounds)\n", ratios.len())
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, Error> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|source| Error::ReadFile { path, source })
}

/// The TLS identity of `user` (`<user>.pem`, `<user>-key.pem`) from `dir`.
fn tls_of(dir: &Path, user: &str) -> Result<ClientTlsConfig, Error> {
    Ok(ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read(dir, "ca.pem")?))
        .identity(Identity::from_pem(read(dir, &format!("{user}.pem"))?, read(dir, &format!("{user}-key.pem"))?)))
}

/// The namespace, the tenant's binding, and the other users' bindings.
fn setup_documents(user: &str, others: usize) -> Vec<Vec<u8>> {
    let binding = |namespace: &str, name: &str, subject: &str| {
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": subject}],
        })
        .to_string()
        .into_bytes()
    };
    let mut docs = vec![
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
            .to_string()
            .into_bytes(),
        binding(NAMESPACE, "fleet-bench-tenant", user),
    ];
    docs.extend((0..others).map(|i| binding(NAMESPACE, &format!("fleet-bench-other-{i}"), &format!("other-{i}"))));
    docs
}

/// Runs the comparison.
pub async fn run(args: &RbacCostArgs) -> Result<Cost, Error> {
    let endpoints = parse_endpoints(&args.endpoints)?;
    let dir = args.tls_dir.as_deref().ok_or(Error::TlsDirMissing)?;
    let timeout = Duration::from_secs(10);
    let connect = |user: String| {
        let endpoints = endpoints.clone();
        async move {
            let tls = tls_of(dir, &user)?;
            let mut connections = Vec::new();
            for endpoint in &endpoints {
                connections.push(Connection {
                    endpoint: endpoint.clone(),
                    channel: open(endpoint, Some(tls.clone()), timeout).await?,
                });
            }
            Ok::<_, Error>(connections)
        }
    };
    let admin = connect("admin".into()).await?;
    let user = connect(args.user.clone()).await.map_err(|e| Error::Invalid {
        flag: "--user",
        value: args.user.clone(),
        reason: format!("{e} (issue it first: fleetctl pki issue-user --dir <tls-dir> --name {})", args.user),
    })?;
    let mut setup = FleetClient::new(admin[0].channel.clone()).max_decoding_message_size(MAX_MESSAGE);
    let docs = setup_documents(&args.user, args.other_bindings);
    let sources = vec!["rbac-cost".to_string(); docs.len()];
    setup
        .apply(ApplyRequest { documents: docs, sources })
        .await
        .map_err(|s| Error::Hub(format!("applying the namespace and bindings: {}", s.message())))?;
    let plan = Plan {
        target: Target::Fleet,
        clients: args.clients,
        warmup: Duration::from_secs(args.warmup_seconds),
        measure: Duration::from_secs(args.seconds),
        value_size: args.value_size,
        keys_per_client: args.keys_per_client,
    };
    // Rounds alternate who goes first, so that neither user always runs
    // on a warmer (or more compacted) hub.
    let (mut write_admin, mut write_user, mut list_admin, mut list_user) =
        (Tally::new()?, Tally::new()?, Tally::new()?, Tally::new()?);
    let (mut write_ratios, mut list_ratios) = (Vec::new(), Vec::new());
    // The ratio of what the two tallies gained in one round.
    let gained = |user: &Tally, admin: &Tally, before: (u64, u64)| {
        let (u, a) = (user.ops - before.0, admin.ops - before.1);
        if a > 0 {
            u as f64 / a as f64
        } else {
            f64::NAN
        }
    };
    for round in 0..args.rounds.max(1) {
        let mut order = [(&admin, true), (&user, false)];
        if round % 2 == 1 {
            order.reverse();
        }
        let before = (write_user.ops, write_admin.ops);
        for (connections, is_admin) in order {
            let tally = if is_admin { &mut write_admin } else { &mut write_user };
            writes(connections, &plan, tally).await?;
        }
        write_ratios.push(gained(&write_user, &write_admin, before));
        let before = (list_user.ops, list_admin.ops);
        for (connections, is_admin) in order {
            let tally = if is_admin { &mut list_admin } else { &mut list_user };
            lists(connections, &plan, tally).await?;
        }
        list_ratios.push(gained(&list_user, &list_admin, before));
    }
    let listed = (args.clients as u64) * args.keys_per_client;
    Ok(Cost {
        write_admin: write_admin.measure(),
        write_user: write_user.measure(),
        list_admin: list_admin.measure(),
        list_user: list_user.measure(),
        clients: args.clients,
        other_bindings: args.other_bindings,
        listed,
        rounds: args.rounds.max(1),
        write_ratios,
        list_ratios,
    })
}

async fn writes(connections: &[Connection], plan: &Plan, tally: &mut Tally) -> Result<(), Error> {
    let outcome = crate::load::run(connections, plan).await?;
    if outcome.ops == 0 {
        return Err(Error::NothingWritten {
            errors: outcome.errors,
            first_error: outcome.first_error.unwrap_or_default(),
        });
    }
    tally.add(outcome.ops, outcome.errors, plan.measure.as_secs_f64(), &outcome.latency)
}

/// `plan.clients` clients listing the namespace's ConfigMaps, one list
/// in flight each, for the warmup and then the measured window.
async fn lists(connections: &[Connection], plan: &Plan, tally: &mut Tally) -> Result<(), Error> {
    let start = Instant::now() + plan.warmup;
    let end = start + plan.measure;
    let mut tasks = Vec::new();
    for id in 0..plan.clients {
        let mut client = FleetClient::new(connections[id % connections.len()].channel.clone())
            .max_decoding_message_size(MAX_MESSAGE);
        tasks.push(tokio::spawn(async move {
            let mut histogram = new_histogram()?;
            let (mut ops, mut errors, mut first_error) = (0u64, 0u64, None);
            while Instant::now() < end {
                let request = ListRequest {
                    kind: Some(KindRef { kind: "ConfigMap".into(), api_version: "v1".into() }),
                    namespace: NAMESPACE.into(),
                    ..ListRequest::default()
                };
                let began = Instant::now();
                let result = client.list(request).await;
                let done = Instant::now();
                let measured = done >= start && done < end;
                match result {
                    Ok(_) if measured => {
                        ops += 1;
                        histogram.saturating_record(
                            u64::try_from(done.duration_since(began).as_micros()).unwrap_or(u64::MAX).max(1),
                        );
                    }
                    Ok(_) => {}
                    Err(status) => {
                        errors += u64::from(measured);
                        first_error.get_or_insert_with(|| format!("{:?}: {}", status.code(), status.message()));
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
            Ok::<_, Error>((ops, errors, first_error, histogram))
        }));
    }
    let (mut ops, mut errors, mut first_error, mut histogram) = (0, 0, None, new_histogram()?);
    for task in tasks {
        let (o, e, f, h) = task.await.map_err(|e| Error::Task(e.to_string()))??;
        ops += o;
        errors += e;
        first_error = first_error.or(f);
        histogram.add(&h).map_err(|e| Error::Histogram(e.to_string()))?;
    }
    if ops == 0 {
        return Err(Error::Hub(format!("not one list succeeded: {}", first_error.unwrap_or_default())));
    }
    tally.add(ops, errors, plan.measure.as_secs_f64(), &histogram)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_the_median_and_extremes_of_finite_ratios() {
        assert_eq!(spread(&[1.2, 0.8, f64::NAN, 1.0]), (1.0, 0.8, 1.2));
        assert_eq!(spread(&[0.9, 1.1]), (1.0, 0.9, 1.1));
        assert_eq!(spread(&[]), (0.0, 0.0, 0.0));
    }

    #[test]
    fn the_setup_binds_the_tenant_among_others() {
        let docs = setup_documents("tenant", 3);
        assert_eq!(docs.len(), 5);
        let tenant: serde_json::Value = serde_json::from_slice(&docs[1]).unwrap();
        assert_eq!(tenant["subjects"][0]["name"], "tenant");
        assert_eq!(tenant["roleRef"]["name"], "edit");
    }
}
