//! List paging: `limit` cuts a list into pages, `metadata.continue` names
//! where the next one starts and `remainingItemCount` how many follow.
//! Every page shows the list as it was at the first page's
//! resourceVersion, as Kubernetes promises. The hub keeps no old versions
//! of objects, only the recent watch history: a page is served from the
//! current state when that history shows nothing in the rest of the list
//! changed since the first page, and is otherwise 410 Expired (the token
//! is "too old"), as Kubernetes answers a token whose version was
//! compacted; clients then list again from the start.

use fleet_api::Object;
use fleet_statemachine::{ListQuery, Store};
use serde_json::{json, Value};

use super::context::Ctx;
use super::errors::KubeError;

/// A `continue` token: the resourceVersion of the first page and the key
/// of the last object sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub resource_version: u64,
    /// `namespace/name` of the last object sent.
    pub after: String,
}

fn sort_key(object: &Object) -> String {
    format!("{}/{}", object.metadata.namespace.as_deref().unwrap_or_default(), object.metadata.name)
}

impl Token {
    /// The opaque text a client sends back.
    pub fn encode(&self) -> String {
        hex::encode(json!({"rv": self.resource_version, "after": self.after}).to_string())
    }

    /// Reads a token a client sent back.
    pub fn decode(text: &str) -> Result<Token, KubeError> {
        let invalid = || {
            KubeError::bad_request(format!(
                "continue: Invalid value: {text:?}: not a continue token this server issued"
            ))
        };
        let bytes = hex::decode(text).map_err(|_| invalid())?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
        let resource_version = value.get("rv").and_then(Value::as_u64).ok_or_else(invalid)?;
        let after = value.get("after").and_then(Value::as_str).ok_or_else(invalid)?.to_string();
        Ok(Token { resource_version, after })
    }

    /// Refuses (410 Expired) a token whose rest of the list may have
    /// changed since its first page: a write after it in scope, or a
    /// version older than the watch history.
    pub fn check_unchanged(&self, store: &Store, query: &ListQuery) -> Result<(), KubeError> {
        let expired = || {
            KubeError::expired(format!(
                "The provided continue parameter is too old to display a consistent list result (resourceVersion \
                 {}): objects after {:?} changed since, or the history no longer reaches back that far. Start a new \
                 list without the continue parameter.",
                self.resource_version, self.after
            ))
        };
        let since = store.hub().events_since(self.resource_version, |_| true).map_err(|_| expired())?;
        let changed = since.iter().any(|event| {
            let key = format!("{}/{}", event.key.namespace, event.key.name);
            key > self.after && query.view_of(event).is_some()
        });
        if changed {
            return Err(expired());
        }
        Ok(())
    }
}

/// `limit`, if the request sets one (0 = no limit, as in Kubernetes).
pub fn limit(ctx: &Ctx) -> Result<Option<usize>, KubeError> {
    match ctx.query.get("limit") {
        None => Ok(None),
        Some(text) => {
            let n = text.parse::<usize>().map_err(|_| {
                KubeError::bad_request(format!("limit: Invalid value: {text:?}: must be a non-negative integer"))
            })?;
            Ok(Some(n).filter(|n| *n > 0))
        }
    }
}

/// What a page adds to a list's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// The token of the next page, when there is one.
    pub next: Option<String>,
    /// Objects after this page.
    pub remaining: usize,
}

impl Page {
    /// Sets `continue` and `remainingItemCount` when more pages follow.
    /// As in Kubernetes, a list chosen by a label or field selector gives
    /// no count (clients must not rely on one there).
    pub fn annotate(&self, metadata: &mut Value, selected: bool) {
        if let Some(next) = &self.next {
            metadata["continue"] = json!(next);
            if !selected {
                metadata["remainingItemCount"] = json!(self.remaining);
            }
        }
    }
}

/// Cuts `items` (a whole list read at `resource_version`) to the page
/// after `token`, at most `limit` long, in namespace/name order.
pub fn page(items: &mut Vec<Object>, token: Option<&Token>, limit: Option<usize>, resource_version: u64) -> Page {
    items.sort_by_key(sort_key);
    if let Some(token) = token {
        items.retain(|o| sort_key(o) > token.after);
    }
    let Some(limit) = limit.filter(|l| *l < items.len()) else { return Page::default() };
    let remaining = items.len() - limit;
    items.truncate(limit);
    let after = items.last().map(sort_key).unwrap_or_default();
    Page { next: Some(Token { resource_version, after }.encode()), remaining }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(names: &[&str]) -> Vec<Object> {
        names
            .iter()
            .map(|n| {
                serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": n, "namespace": "a"}}))
                .expect("object")
            })
            .collect()
    }

    fn names(items: &[Object]) -> Vec<String> {
        items.iter().map(|o| o.metadata.name.clone()).collect()
    }

    #[test]
    fn pages_walk_the_list_in_order_with_counts() {
        let all = objects(&["c", "a", "e", "b", "d"]);
        let mut first = all.clone();
        let page1 = page(&mut first, None, Some(2), 40);
        assert_eq!(names(&first), ["a", "b"]);
        assert_eq!(page1.remaining, 3);
        let token = Token::decode(page1.next.as_deref().expect("more")).expect("token");
        assert_eq!(token, Token { resource_version: 40, after: "a/b".into() });
        let mut second = all.clone();
        let page2 = page(&mut second, Some(&token), Some(2), 40);
        assert_eq!(names(&second), ["c", "d"]);
        let token = Token::decode(page2.next.as_deref().expect("more")).expect("token");
        let mut last = all;
        assert_eq!(page(&mut last, Some(&token), Some(2), 40), Page::default());
        assert_eq!(names(&last), ["e"]);
    }

    #[test]
    fn no_limit_is_one_page_and_bad_tokens_are_refused() {
        let mut all = objects(&["b", "a"]);
        assert_eq!(page(&mut all, None, None, 9), Page::default());
        assert_eq!(names(&all), ["a", "b"]);
        assert_eq!(Token::decode("zz").unwrap_err().code, 400);
        assert_eq!(Token::decode(&hex::encode("{}")).unwrap_err().code, 400);
    }
}
