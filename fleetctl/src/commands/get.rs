//! `get KIND [NAME] [-n NS|-A] [-l SEL] [-o FORMAT] [--consistent] [-w]`.

use std::time::SystemTime;

use fleet_api::placement::{CLUSTER_RESOURCE_PLACEMENT, RESOURCE_PLACEMENT};
use fleet_api::snapshot::{snapshot_kinds, IS_LATEST_LABEL, PARENT_PLACEMENT_LABEL};
use fleet_api::{LabelSelector, Object};

use super::split_kind_name;
use crate::cli::GetArgs;
use crate::client::Client;
use crate::columns::placement::latest_policy_indexes;
use crate::columns::Lookups;
use crate::error::{Error, Result};
use crate::io::Io;
use crate::kind::KindArg;
use crate::output::{render_objects, OutputFormat, TableOptions, WatchPrinter};
use crate::types::ListQuery;
use crate::watch::Watcher;

/// Prints one object or a list; with `-w`, then every change until
/// interrupted.
pub async fn run(client: &Client, args: GetArgs, io: &mut Io) -> Result<()> {
    let (kind_name, name) = split_kind_name(&args.kind, args.name.clone())?;
    let kind = KindArg::resolve(&kind_name);
    let selector = args.selector.clone().unwrap_or_default();
    check_selector(&selector)?;
    if name.is_some() && !selector.is_empty() {
        return Err(Error::Usage("a label selector cannot be combined with a name".to_string()));
    }
    let query = list_query(&kind, &args, selector);
    if args.tree {
        return tree(client, &kind, &query, name.as_deref(), &args, io).await;
    }
    let lookups = lookups(client, &query, name.as_deref(), args.output).await;
    if args.watch {
        return watch(client, query, name, &args, lookups, io).await;
    }
    let now = SystemTime::now();
    let live_heartbeats = args.output == Some(OutputFormat::Wide) && kind.name == "MemberCluster";
    match name {
        Some(name) => {
            let namespace = kind.namespace_for(args.namespace.as_deref());
            let mut object = client.get(&kind, &namespace, &name, args.consistent).await?;
            if live_heartbeats {
                super::heartbeats::decorate(client, std::slice::from_mut(&mut object), now).await;
            }
            let table = table_options(&kind, &args, std::slice::from_ref(&object), lookups);
            io.out(&render_objects(args.output, &[object], true, &table, now)?)
        }
        None => {
            let mut list = client.list(&query).await?;
            if live_heartbeats {
                super::heartbeats::decorate(client, &mut list.items, now).await;
            }
            let prints_table = !matches!(args.output, Some(OutputFormat::Json | OutputFormat::Yaml));
            if list.items.is_empty() && prints_table {
                return io.err(&no_resources(&query));
            }
            let table = table_options(&kind, &args, &list.items, lookups);
            io.out(&render_objects(args.output, &list.items, false, &table, now)?)
        }
    }
}

/// `--tree`: the OCM Placements listed (or the one named) with their
/// decisions ([`super::tree`]).
async fn tree(
    client: &Client,
    kind: &KindArg,
    query: &ListQuery,
    name: Option<&str>,
    args: &GetArgs,
    io: &mut Io,
) -> Result<()> {
    if kind.kind() != fleet_api::ocm::placement::KIND || kind.group() != Some(fleet_api::ocm::CLUSTER_GROUP) {
        return Err(Error::Usage(format!(
            "--tree shows OCM Placements (placements.cluster.open-cluster-management.io), not {}",
            args.kind
        )));
    }
    let placements = match name {
        Some(name) => {
            let namespace = kind.namespace_for(args.namespace.as_deref());
            vec![client.get(kind, &namespace, name, args.consistent).await?]
        }
        None => client.list(query).await?.items,
    };
    if placements.is_empty() {
        return io.err(&no_resources(query));
    }
    let pages =
        ListQuery { kind: KindArg::resolve("placementdecisions"), label_selector: String::new(), ..query.clone() };
    let pages = client.list(&pages).await?.items;
    io.out(&super::tree::render(&placements, &pages))
}

/// Lists (or gets), prints, then follows the changes.
async fn watch(
    client: &Client,
    query: ListQuery,
    name: Option<String>,
    args: &GetArgs,
    lookups: Lookups,
    io: &mut Io,
) -> Result<()> {
    if let Some(name) = &name {
        // Report a missing object as the server words it.
        let namespace = query.kind.namespace_for(args.namespace.as_deref());
        client.get(&query.kind, &namespace, name, args.consistent).await?;
    }
    let kind = query.kind.clone();
    let (mut watcher, items) = Watcher::start(client.clone(), query.clone(), name).await?;
    let table = table_options(&kind, args, &items, lookups);
    let mut printer = WatchPrinter::new(args.output, &table);
    if items.is_empty() && !matches!(args.output, Some(OutputFormat::Json | OutputFormat::Yaml)) {
        io.err(&no_resources(&query))?;
    }
    io.out(&printer.initial(&items, SystemTime::now())?)?;
    loop {
        let event = watcher.next().await?;
        io.out(&printer.event(&event, SystemTime::now())?)?;
    }
}

/// What the columns need from other objects: for `get crp|rp -o wide`, the
/// latest scheduling policy snapshots (one list, in the namespaces the `get`
/// covers), for `POLICY-INDEX`. A failure leaves the column empty.
async fn lookups(client: &Client, query: &ListQuery, name: Option<&str>, output: Option<OutputFormat>) -> Lookups {
    match latest_policy_snapshot_query(query, name, output) {
        Some(snapshots) => match client.list(&snapshots).await {
            Ok(list) => latest_policy_indexes(&list.items),
            Err(_) => Lookups::default(),
        },
        None => Lookups::default(),
    }
}

/// The list of latest policy snapshots `-o wide` of placements needs, if any.
fn latest_policy_snapshot_query(
    query: &ListQuery,
    name: Option<&str>,
    output: Option<OutputFormat>,
) -> Option<ListQuery> {
    let placement_kind = query.kind.kind();
    if output != Some(OutputFormat::Wide) || ![CLUSTER_RESOURCE_PLACEMENT, RESOURCE_PLACEMENT].contains(&placement_kind)
    {
        return None;
    }
    let (_, policy_kind) = snapshot_kinds(placement_kind);
    let mut label_selector = format!("{IS_LATEST_LABEL}=true");
    if let Some(name) = name {
        label_selector.push_str(&format!(",{PARENT_PLACEMENT_LABEL}={name}"));
    }
    Some(ListQuery { kind: KindArg::resolve(policy_kind), label_selector, ..query.clone() })
}

/// What to list: `-A` is every namespace; `-n` one namespace (ignored for
/// cluster-scoped kinds); neither is `default` for namespaced kinds and
/// everything for the others.
fn list_query(kind: &KindArg, args: &GetArgs, label_selector: String) -> ListQuery {
    let namespace = if args.all_namespaces { String::new() } else { kind.namespace_for(args.namespace.as_deref()) };
    ListQuery {
        kind: kind.clone(),
        namespace,
        all_namespaces: args.all_namespaces,
        label_selector,
        consistent: args.consistent,
    }
}

/// The table layout: `NAMESPACE` first with `-A`, or for a kind of unknown
/// scope listed without `-n` when some objects have a namespace.
fn table_options(kind: &KindArg, args: &GetArgs, objects: &[Object], lookups: Lookups) -> TableOptions {
    let unknown_scope_across_namespaces = kind.namespaced().is_none()
        && args.namespace.is_none()
        && objects.iter().any(|o| o.metadata.namespace.as_deref().is_some_and(|ns| !ns.is_empty()));
    TableOptions {
        kind: kind.kind().to_string(),
        wide: args.output == Some(OutputFormat::Wide),
        show_namespace: args.all_namespaces || unknown_scope_across_namespaces,
        lookups,
    }
}

/// kubectl's message for an empty list.
fn no_resources(query: &ListQuery) -> String {
    if query.all_namespaces || query.namespace.is_empty() {
        "No resources found\n".to_string()
    } else {
        format!("No resources found in {} namespace.\n", query.namespace)
    }
}

/// Refuses a malformed selector before asking the server.
fn check_selector(selector: &str) -> Result<()> {
    if selector.is_empty() {
        return Ok(());
    }
    LabelSelector::parse(selector)
        .map(|_| ())
        .map_err(|e| Error::Selector { selector: selector.to_string(), message: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(line: &[&str]) -> GetArgs {
        let mut argv = vec!["fleetctl", "get"];
        argv.extend_from_slice(line);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Get(g) => g,
            other => panic!("{other:?}"),
        }
    }

    fn query(line: &[&str]) -> ListQuery {
        let a = args(line);
        list_query(&KindArg::resolve(&a.kind), &a, String::new())
    }

    #[test]
    fn namespaces_default_like_kubectl() {
        let q = query(&["cm"]);
        assert_eq!((q.namespace.as_str(), q.all_namespaces), ("default", false));
        let q = query(&["cm", "-n", "app"]);
        assert_eq!(q.namespace, "app");
        let q = query(&["cm", "-A"]);
        assert_eq!((q.namespace.as_str(), q.all_namespaces), ("", true));
        let q = query(&["crp", "-n", "app"]);
        assert_eq!(q.namespace, "");
        let q = query(&["widgets"]);
        assert_eq!(q.namespace, "");
    }

    #[test]
    fn empty_list_messages() {
        assert_eq!(no_resources(&query(&["cm"])), "No resources found in default namespace.\n");
        assert_eq!(no_resources(&query(&["cm", "-A"])), "No resources found\n");
        assert_eq!(no_resources(&query(&["crp"])), "No resources found\n");
    }

    #[test]
    fn wide_placements_list_the_latest_policy_snapshots() {
        let a = args(&["rp", "-n", "app", "-o", "wide"]);
        let q = list_query(&KindArg::resolve(&a.kind), &a, String::new());
        let s = latest_policy_snapshot_query(&q, None, a.output).unwrap();
        assert_eq!((s.kind.name.as_str(), s.namespace.as_str()), ("SchedulingPolicySnapshot", "app"));
        assert_eq!(s.label_selector, "kubernetes-fleet.io/is-latest-snapshot=true");
        let a = args(&["crp", "web", "-o", "wide"]);
        let q = list_query(&KindArg::resolve(&a.kind), &a, String::new());
        let s = latest_policy_snapshot_query(&q, Some("web"), a.output).unwrap();
        assert_eq!(s.kind.name, "ClusterSchedulingPolicySnapshot");
        assert_eq!(s.label_selector, "kubernetes-fleet.io/is-latest-snapshot=true,kubernetes-fleet.io/parent-CRP=web");
        assert!(check_selector(&s.label_selector).is_ok());
        assert!(latest_policy_snapshot_query(&q, Some("web"), None).is_none());
        let a = args(&["cm", "-o", "wide"]);
        assert!(latest_policy_snapshot_query(&query(&["cm"]), None, a.output).is_none());
    }

    #[test]
    fn namespace_column_for_all_namespaces() {
        let a = args(&["cm", "-A", "-o", "wide"]);
        let t = table_options(&KindArg::resolve("cm"), &a, &[], Lookups::default());
        assert!(t.show_namespace && t.wide);
        assert_eq!(t.kind, "ConfigMap");
    }
}
