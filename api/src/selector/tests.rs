//! Unit and property tests for label selectors.

use super::*;
use proptest::prelude::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn req(key: &str, operator: SelectorOperator, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement { key: key.into(), operator, values: values.iter().map(|v| v.to_string()).collect() }
}

fn parse(text: &str) -> LabelSelector {
    LabelSelector::parse(text).unwrap()
}

fn parse_err(text: &str) -> String {
    LabelSelector::parse(text).unwrap_err().to_string()
}

#[test]
fn equality_forms() {
    let want = LabelSelector { match_labels: labels(&[("app", "web")]), ..Default::default() };
    assert_eq!(parse("app=web"), want);
    assert_eq!(parse("app==web"), want);
    assert_eq!(parse("  app  ==  web  "), want);
    assert!(want.matches(&labels(&[("app", "web"), ("x", "y")])));
    assert!(!want.matches(&labels(&[("app", "db")])));
    assert!(!want.matches(&labels(&[])));
    assert_eq!(parse("app=").match_labels, labels(&[("app", "")]));
}

#[test]
fn not_equal_matches_missing_key() {
    let s = parse("env!=prod");
    assert_eq!(s.match_expressions, vec![req("env", SelectorOperator::NotIn, &["prod"])]);
    assert!(s.matches(&labels(&[])));
    assert!(s.matches(&labels(&[("env", "dev")])));
    assert!(!s.matches(&labels(&[("env", "prod")])));
}

#[test]
fn set_operators() {
    let s = parse("env in (dev, staging)");
    assert_eq!(s.match_expressions, vec![req("env", SelectorOperator::In, &["dev", "staging"])]);
    assert!(s.matches(&labels(&[("env", "staging")])));
    assert!(!s.matches(&labels(&[("env", "prod")])));
    assert!(!s.matches(&labels(&[])));
    let s = parse("env notin (prod)");
    assert_eq!(s.match_expressions, vec![req("env", SelectorOperator::NotIn, &["prod"])]);
    assert!(s.matches(&labels(&[])));
    assert!(!s.matches(&labels(&[("env", "prod")])));
    assert_eq!(parse("a in()").match_expressions, vec![req("a", SelectorOperator::In, &[""])]);
    assert_eq!(parse("a in (x,)").match_expressions, vec![req("a", SelectorOperator::In, &["x", ""])]);
}

#[test]
fn existence_operators() {
    let s = parse("gpu");
    assert_eq!(s.match_expressions, vec![req("gpu", SelectorOperator::Exists, &[])]);
    assert!(s.matches(&labels(&[("gpu", "")])));
    assert!(!s.matches(&labels(&[])));
    let s = parse("! gpu");
    assert_eq!(s.match_expressions, vec![req("gpu", SelectorOperator::DoesNotExist, &[])]);
    assert!(s.matches(&labels(&[("other", "x")])));
    assert!(!s.matches(&labels(&[("gpu", "true")])));
}

#[test]
fn combined_requirements_all_hold() {
    let s = parse(" app=web , env in (dev,prod),!legacy, example.com/tier ,zone!=b ");
    assert_eq!(s.match_labels, labels(&[("app", "web")]));
    assert_eq!(s.match_expressions.len(), 4);
    let good = labels(&[("app", "web"), ("env", "dev"), ("example.com/tier", "1")]);
    assert!(s.matches(&good));
    let mut bad = good.clone();
    bad.insert("legacy".into(), "x".into());
    assert!(!s.matches(&bad));
    // Two different equalities on one key can never both hold.
    let s = parse("a=b,a=c");
    assert!(!s.matches(&labels(&[("a", "b")])));
    assert!(!s.matches(&labels(&[("a", "c")])));
    assert!(parse("a=b,a=b").matches(&labels(&[("a", "b")])));
}

#[test]
fn empty_selector_matches_everything() {
    for text in ["", "   "] {
        let s = parse(text);
        assert!(s.is_empty());
        assert!(s.matches(&labels(&[])));
        assert!(s.matches(&labels(&[("a", "b")])));
        assert_eq!(s.to_string(), "");
    }
    assert!(!parse("a").is_empty());
}

#[test]
fn syntax_errors_quote_the_selector_and_say_what_is_allowed() {
    assert_eq!(
        parse_err("env in prod"),
        "unable to parse label selector \"env in prod\": expected '(' after 'in', found \"prod\"; \
         a selector is a comma-separated list of `key=value`, `key==value`, `key!=value`, \
         `key in (v1,v2)`, `key notin (v1,v2)`, `key` or `!key`"
    );
    for (text, detail) in [
        ("a=b,", "expected a requirement after ','"),
        (",a", "expected a label key, found ','"),
        ("a,,b", "expected a label key, found ','"),
        ("a b", "expected '=', '==', '!=', 'in', 'notin', ',' or end after key \"a\", found \"b\""),
        ("!a=b", "expected ',' or end after '!a', found '='"),
        ("a<5", "operator '<' is not supported"),
        ("a in (x", "expected a value, ',' or ')' in the 'in' list, found end of selector"),
        ("a notin (x y)", "expected a value, ',' or ')' in the 'notin' list, found \"y\""),
        ("a in (x) b", "expected ',' or end after the requirement on \"a\", found \"b\""),
        ("a=b=c", "expected ',' or end after the requirement on \"a\", found '='"),
        ("a!=(", "expected a value after '!=', found '('"),
        ("=b", "expected a label key, found '='"),
        ("!", "expected a label key, found end of selector"),
    ] {
        let message = parse_err(text);
        assert!(message.starts_with(&format!("unable to parse label selector {}: ", quote(text))), "{message}");
        assert!(message.contains(detail), "{text}: {message}");
        assert!(message.contains(ALLOWED), "{message}");
    }
}

#[test]
fn invalid_keys_and_values_are_refused() {
    let message = parse_err("-app=web");
    assert!(
        message.starts_with("invalid label key \"-app\" in selector \"-app=web\": name part must consist"),
        "{message}"
    );
    let message = parse_err("app in (ok, -bad)");
    assert!(
        message.starts_with("invalid label value \"-bad\" in selector \"app in (ok, -bad)\": a valid label"),
        "{message}"
    );
    assert!(matches!(LabelSelector::parse("a=b/c"), Err(SelectorError::InvalidValue { .. })));
}

#[test]
fn display_uses_the_dash_l_form() {
    let s = LabelSelector {
        match_labels: labels(&[("app", "web"), ("tier", "")]),
        match_expressions: vec![
            req("env", SelectorOperator::In, &["dev", "prod"]),
            req("zone", SelectorOperator::NotIn, &["a"]),
            req("zone2", SelectorOperator::NotIn, &["a", "b"]),
            req("gpu", SelectorOperator::Exists, &[]),
            req("legacy", SelectorOperator::DoesNotExist, &[]),
        ],
    };
    let text = s.to_string();
    assert_eq!(text, "app=web,tier=,env in (dev,prod),zone!=a,zone2 notin (a,b),gpu,!legacy");
    assert_eq!(parse(&text), s);
}

#[test]
fn serde_uses_kubernetes_names() {
    let json = r#"{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"env","operator":"NotIn","values":["prod"]},{"key":"gpu","operator":"DoesNotExist"}]}"#;
    let s: LabelSelector = serde_json::from_str(json).unwrap();
    assert_eq!(s, parse("app=web,env!=prod,!gpu"));
    assert_eq!(serde_json::to_string(&s).unwrap(), json);
    assert_eq!(serde_json::to_string(&LabelSelector::default()).unwrap(), "{}");
    for op in ["In", "NotIn", "Exists", "DoesNotExist"] {
        let r: LabelSelectorRequirement = serde_json::from_str(&format!(r#"{{"key":"k","operator":"{op}"}}"#)).unwrap();
        assert_eq!(r.operator.as_str(), op);
        assert_eq!(serde_json::to_value(r).unwrap()["operator"], op);
    }
    assert!(serde_json::from_str::<LabelSelector>(r#"{"matchLabel":{}}"#).is_err());
    assert!(serde_json::from_str::<LabelSelectorRequirement>(r#"{"key":"k","operator":"Gt"}"#).is_err());
}

#[test]
fn validate_reports_paths() {
    let s = LabelSelector {
        match_labels: labels(&[("bad key", "ok"), ("ok", "-bad")]),
        match_expressions: vec![
            req("a", SelectorOperator::In, &[]),
            req("b", SelectorOperator::Exists, &["x"]),
            req("-c", SelectorOperator::NotIn, &["ok", "bad value"]),
        ],
    };
    let errors: Vec<String> = s
        .validate("spec.resourceSelectors[0].labelSelector")
        .iter()
        .map(|e| {
            let mut text = e.to_string();
            text.truncate(text.find(": a ").or(text.find(": name part")).unwrap_or(text.len()));
            text
        })
        .collect();
    let p = "spec.resourceSelectors[0].labelSelector";
    assert_eq!(
        errors,
        vec![
            format!("{p}.matchLabels: Invalid value: \"bad key\""),
            format!("{p}.matchLabels[ok]: Invalid value: \"-bad\""),
            format!("{p}.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
            format!("{p}.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
            format!("{p}.matchExpressions[2].key: Invalid value: \"-c\""),
            format!("{p}.matchExpressions[2].values[1]: Invalid value: \"bad value\""),
        ]
    );
    assert!(parse("a=b,c in (d),!e").validate("x").is_empty());
    assert_eq!(
        LabelSelector { match_expressions: vec![req("a", SelectorOperator::In, &[])], ..Default::default() }
            .validate("")[0]
            .path,
        "matchExpressions[0].values"
    );
}

/// Straightforward reference semantics, written independently of `matches`.
fn reference(s: &LabelSelector, l: &BTreeMap<String, String>) -> bool {
    for (k, v) in &s.match_labels {
        if !l.contains_key(k) || l[k] != *v {
            return false;
        }
    }
    for r in &s.match_expressions {
        let present = l.contains_key(&r.key);
        let in_values = present && r.values.iter().any(|v| *v == l[&r.key]);
        let ok = match r.operator {
            SelectorOperator::In => in_values,
            SelectorOperator::NotIn => !in_values,
            SelectorOperator::Exists => present,
            SelectorOperator::DoesNotExist => !present,
        };
        if !ok {
            return false;
        }
    }
    true
}

const KEYS: &[&str] = &["a", "b", "in", "example.com/c"];
const VALUES: &[&str] = &["", "x", "y", "Z_1.2"];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(str::to_string)
}

fn value() -> impl Strategy<Value = String> {
    prop::sample::select(VALUES).prop_map(str::to_string)
}

fn requirement() -> impl Strategy<Value = LabelSelectorRequirement> {
    let set = (key(), prop::bool::ANY, prop::collection::vec(value(), 1..4)).prop_map(|(key, is_in, values)| {
        let operator = if is_in { SelectorOperator::In } else { SelectorOperator::NotIn };
        LabelSelectorRequirement { key, operator, values }
    });
    let exists = (key(), prop::bool::ANY).prop_map(|(key, exists)| {
        let operator = if exists { SelectorOperator::Exists } else { SelectorOperator::DoesNotExist };
        LabelSelectorRequirement { key, operator, values: Vec::new() }
    });
    prop_oneof![set, exists]
}

fn selector() -> impl Strategy<Value = LabelSelector> {
    (prop::collection::btree_map(key(), value(), 0..3), prop::collection::vec(requirement(), 0..4))
        .prop_map(|(match_labels, match_expressions)| LabelSelector { match_labels, match_expressions })
}

fn label_sets() -> impl Strategy<Value = Vec<BTreeMap<String, String>>> {
    prop::collection::vec(prop::collection::btree_map(key(), value(), 0..5), 16)
}

proptest! {
    #[test]
    fn display_then_parse_selects_the_same_labels(s in selector(), sets in label_sets()) {
        let text = s.to_string();
        let back = LabelSelector::parse(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(back.validate("").is_empty());
        for l in &sets {
            prop_assert_eq!(s.matches(l), back.matches(l), "{} on {:?}", text, l);
        }
        let again = LabelSelector::parse(&back.to_string()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(again, back);
    }

    #[test]
    fn matches_agrees_with_reference(s in selector(), sets in label_sets()) {
        for l in &sets {
            prop_assert_eq!(s.matches(l), reference(&s, l));
        }
    }

    #[test]
    fn parse_never_panics(text in "[a-z=!(), in]{0,24}") {
        let _ = LabelSelector::parse(&text);
    }
}
