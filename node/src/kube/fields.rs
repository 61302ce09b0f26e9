//! Field selectors (`metadata.name=web,involvedObject.kind=Pod,status.x!=y`):
//! any dotted path of the object, compared as text (a missing field is "").

use serde_json::Value;

use super::errors::KubeError;

/// One requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    path: Vec<String>,
    value: String,
    equal: bool,
}

/// A parsed field selector; empty selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<Requirement>,
}

impl FieldSelector {
    /// Parses `a.b=v,c!=w` (`==` also means equal).
    pub fn parse(text: &str) -> Result<FieldSelector, KubeError> {
        let mut requirements = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, value, equal) = if let Some((f, v)) = term.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, v, true)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, v, true)
            } else {
                return Err(KubeError::bad_request(format!(
                    "invalid field selector {text:?}: {term:?} is not field=value, field==value or field!=value"
                )));
            };
            let field = field.trim();
            if field.is_empty() || field.split('.').any(str::is_empty) {
                return Err(KubeError::bad_request(format!(
                    "invalid field selector {text:?}: {field:?} is not a field path such as metadata.name"
                )));
            }
            requirements.push(Requirement {
                path: field.split('.').map(str::to_string).collect(),
                value: value.trim().to_string(),
                equal,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether it selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `object` (as JSON) satisfies every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let found = r.path.iter().try_fold(object, |v, key| v.get(key.as_str()));
            let text = match found {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (text == r.value) == r.equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selects_by_any_field_path() {
        let event = json!({"metadata": {"name": "e1", "namespace": "default"}, "involvedObject": {"kind": "ClusterResourcePlacement", "name": "web"}, "count": 2});
        assert!(FieldSelector::parse("involvedObject.name=web,involvedObject.kind==ClusterResourcePlacement")
            .unwrap()
            .matches(&event));
        assert!(!FieldSelector::parse("metadata.name!=e1").unwrap().matches(&event));
        assert!(FieldSelector::parse("count=2").unwrap().matches(&event));
        assert!(FieldSelector::parse("involvedObject.uid=").unwrap().matches(&event));
        assert!(FieldSelector::parse("").unwrap().matches(&event));
        assert_eq!(FieldSelector::parse("name").unwrap_err().code, 400);
    }
}
