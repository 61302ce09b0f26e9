//! `describe KIND NAME [-n NS]`.

use std::time::SystemTime;

use super::split_kind_name;
use crate::cli::DescribeArgs;
use crate::client::Client;
use crate::describe::{involves, render};
use crate::error::{Error, Result};
use crate::io::Io;
use crate::kind::{KindArg, DEFAULT_NAMESPACE};
use crate::types::ListQuery;

/// Prints the object and the Events about it (from its namespace, or
/// `default` for cluster-scoped objects).
pub async fn run(client: &Client, args: DescribeArgs, io: &mut Io) -> Result<()> {
    let (kind_name, name) = split_kind_name(&args.kind, args.name.clone())?;
    let name = name.ok_or_else(|| Error::Usage("describe needs KIND NAME".to_string()))?;
    let kind = KindArg::resolve(&kind_name);
    let namespace = kind.namespace_for(args.namespace.as_deref());
    let object = client.get(&kind, &namespace, &name, args.consistent).await?;
    let events_namespace = match object.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => ns.to_string(),
        _ => DEFAULT_NAMESPACE.to_string(),
    };
    let query =
        ListQuery { consistent: args.consistent, ..ListQuery::new(KindArg::resolve("Event"), events_namespace) };
    let events = match client.list(&query).await {
        Ok(list) => list.items.into_iter().filter(|e| involves(e, &object)).collect(),
        Err(e) => {
            io.err(&format!("warning: cannot list events: {e}\n"))?;
            Vec::new()
        }
    };
    io.out(&render(&object, &events, SystemTime::now()))
}
