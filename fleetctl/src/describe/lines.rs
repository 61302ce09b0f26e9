//! Aligned `label:  value` text as kubectl's describers print it.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::smart_label;
use crate::table::Table;

/// Lines of `label:<TAB>value` text, aligned like Go's tabwriter (padding 2)
/// over runs of consecutive lines that have a value.
#[derive(Default)]
pub(crate) struct Lines {
    lines: Vec<(String, Option<String>)>,
}

impl Lines {
    /// `label:  value`, aligned with its neighbours.
    pub(crate) fn field(&mut self, level: usize, label: &str, value: &str) {
        self.lines.push((format!("{}{label}:", indent(level)), Some(value.to_string())));
    }

    /// `label:` with nothing after it (a section).
    pub(crate) fn header(&mut self, level: usize, label: &str) {
        self.lines.push((format!("{}{label}:", indent(level)), None));
    }

    /// A line as it is, indented.
    pub(crate) fn plain(&mut self, level: usize, text: &str) {
        self.lines.push((format!("{}{text}", indent(level)), None));
    }

    /// `Labels:  a=b` then one `k=v` per line below, or `<none>`.
    pub(crate) fn map_multiline(&mut self, label: &str, map: &BTreeMap<String, String>) {
        if map.is_empty() {
            self.field(0, label, "<none>");
            return;
        }
        for (i, (k, v)) in map.iter().enumerate() {
            let text = format!("{k}={v}");
            if i == 0 {
                self.field(0, label, &text);
            } else {
                self.lines.push((String::new(), Some(text)));
            }
        }
    }

    /// Every field of `content`, sorted by name, nested maps and lists indented.
    pub(crate) fn content(&mut self, level: usize, content: &Map<String, Value>) {
        let mut fields: Vec<(&String, &Value)> = content.iter().collect();
        fields.sort_by(|a, b| a.0.cmp(b.0));
        for (field, value) in fields {
            let label = smart_label(field);
            match value {
                Value::Object(map) => {
                    self.header(level, &label);
                    self.content(level + 1, map);
                }
                Value::Array(items) => {
                    self.header(level, &label);
                    for item in items {
                        match item {
                            Value::Object(map) => self.content(level + 1, map),
                            other => self.plain(level + 1, &scalar(other)),
                        }
                    }
                }
                other => self.field(level, &label, &scalar(other)),
            }
        }
    }

    /// Every line of a rendered table, indented.
    pub(crate) fn table(&mut self, level: usize, table: &Table) {
        for line in table.render().lines() {
            self.plain(level, line);
        }
    }

    /// The text, one line per entry, values aligned per run.
    pub(crate) fn finish(self) -> String {
        let mut text = String::new();
        let mut i = 0;
        while i < self.lines.len() {
            let run_end = if self.lines[i].1.is_some() {
                let mut j = i;
                while j < self.lines.len() && self.lines[j].1.is_some() {
                    j += 1;
                }
                j
            } else {
                i + 1
            };
            let width = self.lines[i..run_end].iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0) + 2;
            for (label, value) in &self.lines[i..run_end] {
                let mut line = label.clone();
                if let Some(value) = value {
                    line.extend(std::iter::repeat_n(' ', width - label.chars().count()));
                    line.push_str(value);
                }
                text.push_str(line.trim_end());
                text.push('\n');
            }
            i = run_end;
        }
        text
    }
}

/// Two spaces per level.
pub(crate) fn indent(level: usize) -> String {
    "  ".repeat(level)
}

/// A scalar JSON value as text (strings unquoted, null empty).
pub(crate) fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
