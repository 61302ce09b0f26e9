use super::*;
use serde_json::json;

fn job(active: i64) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "status": {"active": active, "conditions": [{"type": "Complete", "status": "True"}]}})
}

fn exprs(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn expressions_are_all_true_or_say_why_not() {
    let one = exprs(&["object.status.active == 1"]);
    assert_eq!(evaluate(&one, &job(1)), Ok(true));
    assert_eq!(evaluate(&one, &job(3)), Ok(false));
    let both = exprs(&[
        "object.metadata.name == 'j'",
        "object.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')",
    ]);
    assert_eq!(evaluate(&both, &job(0)), Ok(true));
    assert!(evaluate(&exprs(&["object.status.active"]), &job(1)).unwrap_err().contains("expected a bool"));
    assert!(evaluate(&exprs(&["object.status.missing == 1"]), &job(1)).is_err());
    assert_eq!(
        message("result ? 'One pod is active' : 'There is not only one pod active'", &job(1), true),
        Ok("One pod is active".into())
    );
    assert!(message("1 + 1", &job(1), true).is_err());
}

#[test]
fn condition_rules_have_has_conditions_and_the_shared_libraries() {
    let object = job(1);
    let holds = |e: &str| evaluate(&exprs(&[e]), &object);
    assert_eq!(holds("hasConditions(object.status)"), Ok(true));
    assert_eq!(holds("hasConditions(object.metadata)"), Ok(false));
    assert_eq!(holds("object.metadata.name.upperAscii() == 'J'"), Ok(true));
    assert_eq!(holds("object.kind.matches('^Jo')"), Ok(true));
    assert_eq!(check("hasConditions(object.status)", Library::Conditions), None);
    assert!(check("object.scores('x').size() > 0", Library::Conditions).unwrap().contains("scores"));
    assert!(check("'{}'.parseJSON() == {}", Library::Conditions).unwrap().contains("parseJSON"));
}

#[test]
fn what_is_checked_before_it_is_stored() {
    let placement = Library::Placement;
    assert_eq!(check("managedCluster.metadata.name == 'a'", placement), None);
    assert!(check("managedCluster ==", placement).unwrap().contains("does not compile"));
    assert!(check(&"a".repeat(2000), placement).unwrap().contains("longer than"));
    let nested = "object.a.all(x, x.b.all(y, y.c.exists(z, z)))";
    assert!(check(nested, Library::Conditions).unwrap().contains("more than 2 comprehensions"));
    assert_eq!(check("managedCluster.scores('x').size() > 0", placement), None);
    assert!(check("isURL('https://a')", placement).unwrap().contains("isURL, which this environment does not provide"));
    assert!(check("hasConditions(managedCluster.status)", placement).unwrap().contains("hasConditions"));
}

fn cluster() -> Value {
    json!({"metadata": {"name": "c1", "labels": {"env": "prod"}},
        "status": {"version": {"kubernetes": "v1.30.2"},
            "allocatable": {"cpu": "3800m", "memory": "16Gi"},
            "clusterClaims": [{"name": "info", "value": "{\"region\": \"eu\", \"nodes\": 3}"}]}})
}

fn selects(expression: &str) -> Result<bool, String> {
    assert_eq!(check(expression, Library::Placement), None, "{expression}");
    Compiled::new(&exprs(&[expression]))?.matches(&cluster(), None)
}

#[test]
fn quantities_compare_exactly() {
    assert_eq!(selects("quantity(managedCluster.status.allocatable.cpu).isGreaterThan(quantity('3'))"), Ok(true));
    assert_eq!(selects("quantity(managedCluster.status.allocatable.cpu).isLessThan(quantity('3800m'))"), Ok(false));
    assert_eq!(
        selects("quantity('16Gi').compareTo(quantity(managedCluster.status.allocatable.memory)) == 0"),
        Ok(true)
    );
    assert_eq!(selects("quantity('1') == quantity('1000m') && quantity('1') != quantity('2')"), Ok(true));
    assert_eq!(selects("quantity('0.1').add(quantity('0.2')) == quantity('300m')"), Ok(true));
    assert_eq!(selects("quantity('2').sub(3).sign() == -1"), Ok(true));
    assert_eq!(selects("quantity('1k').add(24).asInteger() == 1024"), Ok(true));
    assert_eq!(selects("!quantity('1500m').isInteger() && quantity('1500m').asApproximateFloat() == 1.5"), Ok(true));
    assert_eq!(selects("isQuantity('16Gi') && !isQuantity('16 Gi')"), Ok(true));
    assert!(selects("quantity('1500m').asInteger() == 1").unwrap_err().contains("cannot convert value to integer"));
    assert!(selects("quantity('lots').sign() == 1").is_err());
}

#[test]
fn versions_compare_by_precedence() {
    assert_eq!(
        selects("semver(managedCluster.status.version.kubernetes.substring(1)).isGreaterThan(semver('1.29.9'))"),
        Ok(true)
    );
    assert_eq!(
        selects("semver('1.30.2').major() == 1 && semver('1.30.2').minor() == 30 && semver('1.30.2').patch() == 2"),
        Ok(true)
    );
    assert_eq!(selects("semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))"), Ok(true));
    assert_eq!(selects("semver('1.0.0-alpha.2').compareTo(semver('1.0.0-alpha.10')) == -1"), Ok(true));
    assert_eq!(selects("semver('1.0.0+a') == semver('1.0.0+b') && semver('1.0.0') != semver('1.0.1')"), Ok(true));
    assert_eq!(
        selects("isSemver('1.2.3') && !isSemver('v1.2.3') && !isSemver('1.2') && !isSemver('01.2.3')"),
        Ok(true)
    );
    assert!(selects("semver('v1.2.3').major() == 1").is_err());
}

#[test]
fn claims_parse_as_json_with_numbers_as_doubles() {
    let info = "managedCluster.status.clusterClaims.filter(c, c.name == 'info')[0].value.parseJSON()";
    assert_eq!(selects(&format!("{info}.region == 'eu'")), Ok(true));
    assert_eq!(selects(&format!("{info}.nodes == 3.0")), Ok(true));
    assert!(selects("'{not json'.parseJSON() == {}").unwrap_err().contains("failed to parse json"));
}

#[test]
fn regex_and_string_functions() {
    assert_eq!(selects("managedCluster.metadata.name.find('[0-9]+') == '1'"), Ok(true));
    assert_eq!(selects("'a1b22c333'.findAll('[0-9]+') == ['1', '22', '333']"), Ok(true));
    assert_eq!(selects("'a1b22c333'.findAll('[0-9]+', 2).size() == 2"), Ok(true));
    assert_eq!(selects("'abc'.find('[0-9]') == ''"), Ok(true));
    assert_eq!(
        selects("managedCluster.metadata.labels.env.startsWith('pr') && 'x,y'.split(',').size() == 2"),
        Ok(true)
    );
    assert!(selects("'a'.find('(') == ''").is_err());
}

#[test]
fn scores_read_the_receivers_addon_placement_score() {
    let reader: ScoreReader = Arc::new(|cluster: &str, resource: &str| {
        (cluster == "c1" && resource == "usage").then(|| vec![("cpu".to_string(), 70), ("mem".to_string(), -20)])
    });
    let compiled = |e: &str| Compiled::new(&exprs(&[e])).unwrap();
    let high_cpu = compiled("managedCluster.scores('usage').exists(s, s.name == 'cpu' && s.value > 50)");
    assert!(high_cpu.uses_scores());
    assert_eq!(high_cpu.matches(&cluster(), Some(&reader)), Ok(true));
    let missing = compiled("managedCluster.scores('absent').size() > 0");
    assert!(missing.matches(&cluster(), Some(&reader)).unwrap_err().contains("not found"));
    assert!(high_cpu.matches(&cluster(), None).is_err());
    assert!(!compiled("managedCluster.metadata.name == 'c1'").uses_scores());
    assert!(calls_scores(&exprs(&["true", "managedCluster.scores('x').size() > 0"])));
    assert!(!calls_scores(&exprs(&["managedCluster.metadata.name == 'scores'"])));
}
