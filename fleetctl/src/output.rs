//! Rendering objects for `get`: tables, JSON, YAML and names, for lists and
//! for watch events.

use std::time::SystemTime;

use fleet_api::Object;
use serde::Serialize;
use serde_json::{json, Value};

use crate::columns::{self, Column, Lookups, RowContext};
use crate::error::{Error, Result};
use crate::kind::resource_name;
use crate::table::{render_line, Table};
use crate::types::WatchEvent;

/// The `-o` formats of `get`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The whole object(s) as pretty JSON.
    Json,
    /// The whole object(s) as YAML.
    Yaml,
    /// A table with more columns.
    Wide,
    /// `kind.group/name` per line.
    Name,
}

/// How a table is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableOptions {
    /// The canonical Kind, choosing the column set.
    pub kind: String,
    /// `-o wide`.
    pub wide: bool,
    /// Put `NAMESPACE` first (`-A`).
    pub show_namespace: bool,
    /// Facts from other objects some columns show (fetched once per `get`).
    pub lookups: Lookups,
}

impl TableOptions {
    /// The columns for these options.
    pub fn columns(&self) -> Vec<Column> {
        let mut cols = Vec::new();
        if self.show_namespace {
            cols.push(columns::namespace_column());
        }
        cols.extend(columns::columns_for(&self.kind, self.wide));
        cols
    }
}

/// `{"apiVersion":"v1","kind":"List","items":[...]}`.
pub fn list_value(items: &[Object]) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// Pretty JSON with a final newline.
pub fn to_json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string_pretty(value).map(|s| s + "\n").map_err(|e| Error::Render(e.to_string()))
}

/// YAML (ends with a newline).
pub fn to_yaml(value: &impl Serialize) -> Result<String> {
    serde_yaml_ng::to_string(value).map_err(|e| Error::Render(e.to_string()))
}

/// Renders the result of a `get`. `single` is true for a get by name: JSON
/// and YAML then print the object itself, otherwise a `List`. `format`
/// `None` (or `Wide`) prints a table.
pub fn render_objects(
    format: Option<OutputFormat>,
    objects: &[Object],
    single: bool,
    table: &TableOptions,
    now: SystemTime,
) -> Result<String> {
    match format {
        Some(OutputFormat::Json) => match (single, objects) {
            (true, [one]) => to_json(one),
            _ => to_json(&list_value(objects)),
        },
        Some(OutputFormat::Yaml) => match (single, objects) {
            (true, [one]) => to_yaml(one),
            _ => to_yaml(&list_value(objects)),
        },
        Some(OutputFormat::Name) => Ok(objects.iter().map(|o| resource_name(o) + "\n").collect()),
        Some(OutputFormat::Wide) | None => Ok(render_table(objects, table, now).render()),
    }
}

/// The table of `objects`.
pub fn render_table(objects: &[Object], options: &TableOptions, now: SystemTime) -> Table {
    let columns = options.columns();
    let context = RowContext { now, lookups: &options.lookups };
    let mut table = Table::new(columns::headers(&columns));
    for object in objects {
        table.push(columns::row(&columns, object, &context));
    }
    table
}

/// Prints a watch: the initial objects, then one line (or document) per event.
pub struct WatchPrinter {
    format: Option<OutputFormat>,
    columns: Vec<Column>,
    lookups: Lookups,
    widths: Option<Vec<usize>>,
}

impl WatchPrinter {
    /// A printer for `format` with the table laid out by `table` (whose
    /// lookups stay as they were when the watch started).
    pub fn new(format: Option<OutputFormat>, table: &TableOptions) -> WatchPrinter {
        WatchPrinter { format, columns: table.columns(), lookups: table.lookups.clone(), widths: None }
    }

    /// The initial objects (as `ADDED` events in JSON mode). Empty when there
    /// are none: the table header then comes with the first event.
    pub fn initial(&mut self, objects: &[Object], now: SystemTime) -> Result<String> {
        match self.format {
            Some(OutputFormat::Wide) | None => {
                if objects.is_empty() {
                    return Ok(String::new());
                }
                let context = RowContext { now, lookups: &self.lookups };
                let mut table = Table::new(columns::headers(&self.columns));
                for object in objects {
                    table.push(columns::row(&self.columns, object, &context));
                }
                self.widths = Some(table.widths());
                Ok(table.render())
            }
            _ => {
                let mut text = String::new();
                for object in objects {
                    text.push_str(&self.object_text("ADDED", object)?);
                }
                Ok(text)
            }
        }
    }

    /// One event's output.
    pub fn event(&mut self, event: &WatchEvent, now: SystemTime) -> Result<String> {
        let Some(object) = &event.object else {
            return Ok(String::new());
        };
        match self.format {
            Some(OutputFormat::Wide) | None => {
                let cells = columns::row(&self.columns, object, &RowContext { now, lookups: &self.lookups });
                let mut text = String::new();
                let widths = match &self.widths {
                    Some(widths) => widths.clone(),
                    None => {
                        let headers = columns::headers(&self.columns);
                        let widths: Vec<usize> =
                            headers.iter().zip(&cells).map(|(h, c)| h.chars().count().max(c.chars().count())).collect();
                        text.push_str(&render_line(&headers, &widths));
                        text.push('\n');
                        self.widths = Some(widths.clone());
                        widths
                    }
                };
                text.push_str(&render_line(&cells, &widths));
                text.push('\n');
                Ok(text)
            }
            _ => self.object_text(event.event_type.as_str(), object),
        }
    }

    fn object_text(&self, event_type: &str, object: &Object) -> Result<String> {
        match self.format {
            Some(OutputFormat::Json) => {
                let line = json!({"type": event_type, "object": object});
                serde_json::to_string(&line).map(|s| s + "\n").map_err(|e| Error::Render(e.to_string()))
            }
            Some(OutputFormat::Yaml) => Ok(format!("---\n{}", to_yaml(object)?)),
            _ => Ok(resource_name(object) + "\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::EventType;
    use fleet_api::time::system_time;

    fn cm(name: &str, ns: &str) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2024-05-01T10:00:00Z"},
            "data": {"k": "v"}
        }))
        .unwrap()
    }

    fn now() -> SystemTime {
        system_time("2024-05-01T13:00:00Z").unwrap()
    }

    fn opts(show_namespace: bool) -> TableOptions {
        TableOptions { kind: "ConfigMap".into(), wide: false, show_namespace, lookups: Lookups::default() }
    }

    #[test]
    fn one_object_prints_itself_several_print_a_list() {
        let one = render_objects(Some(OutputFormat::Json), &[cm("a", "d")], true, &opts(false), now()).unwrap();
        let v: Value = serde_json::from_str(&one).unwrap();
        assert_eq!(v["kind"], "ConfigMap");
        assert_eq!(v["data"]["k"], "v");
        let many = render_objects(Some(OutputFormat::Json), &[cm("a", "d"), cm("b", "d")], false, &opts(false), now())
            .unwrap();
        let v: Value = serde_json::from_str(&many).unwrap();
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["kind"], "List");
        assert_eq!(v["items"].as_array().unwrap().len(), 2);
        assert_eq!(v.as_object().unwrap().len(), 3);
        let empty = render_objects(Some(OutputFormat::Json), &[], false, &opts(false), now()).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&empty).unwrap(), json!({"apiVersion":"v1","kind":"List","items":[]}));
    }

    #[test]
    fn yaml_list_and_object() {
        let one = render_objects(Some(OutputFormat::Yaml), &[cm("a", "d")], true, &opts(false), now()).unwrap();
        assert!(one.starts_with("apiVersion: v1\nkind: ConfigMap\n"), "{one}");
        let list = render_objects(Some(OutputFormat::Yaml), &[cm("a", "d")], false, &opts(false), now()).unwrap();
        let v: Value = serde_yaml_ng::from_str(&list).unwrap();
        assert_eq!(v["kind"], "List");
        assert_eq!(v["items"][0]["metadata"]["name"], "a");
    }

    #[test]
    fn name_output() {
        let text = render_objects(Some(OutputFormat::Name), &[cm("a", "d"), cm("b", "d")], false, &opts(false), now())
            .unwrap();
        assert_eq!(text, "configmap/a\nconfigmap/b\n");
    }

    #[test]
    fn table_with_namespaces() {
        let text = render_objects(None, &[cm("a", "default"), cm("bb", "x")], false, &opts(true), now()).unwrap();
        assert_eq!(text, "NAMESPACE   NAME   AGE\ndefault     a      3h\nx           bb     3h\n");
    }

    #[test]
    fn watch_rows_keep_the_initial_widths() {
        let mut p = WatchPrinter::new(None, &opts(false));
        let first = p.initial(&[cm("a-long-name", "d")], now()).unwrap();
        assert_eq!(first, "NAME          AGE\na-long-name   3h\n");
        let ev = WatchEvent { event_type: EventType::Modified, object: Some(cm("b", "d")), resource_version: 5 };
        assert_eq!(p.event(&ev, now()).unwrap(), "b             3h\n");
    }

    #[test]
    fn watch_header_comes_with_the_first_event_when_empty() {
        let mut p = WatchPrinter::new(None, &opts(false));
        assert_eq!(p.initial(&[], now()).unwrap(), "");
        let ev = WatchEvent { event_type: EventType::Added, object: Some(cm("b", "d")), resource_version: 5 };
        assert_eq!(p.event(&ev, now()).unwrap(), "NAME   AGE\nb      3h\n");
    }

    #[test]
    fn watch_json_is_one_event_per_line() {
        let mut p = WatchPrinter::new(Some(OutputFormat::Json), &opts(false));
        let ev = WatchEvent { event_type: EventType::Deleted, object: Some(cm("b", "d")), resource_version: 5 };
        let line = p.event(&ev, now()).unwrap();
        assert_eq!(line.matches('\n').count(), 1);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["type"], "DELETED");
        assert_eq!(v["object"]["metadata"]["name"], "b");
    }
}
