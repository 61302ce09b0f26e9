//! Checks of the documentation that need no hub: the command-line
//! reference in `docs/cli/` is exactly what the programs' clap definitions
//! generate, every relative Markdown link in the repository leads to a
//! file (and, for a Markdown file, a heading) that exists, and every rule
//! id the code cites (`OV-3`, `SU-10`...) is defined in `docs/spec/`.
//!
//! After changing a flag or a help text, regenerate the reference with
//! `FLEET_REGENERATE_DOCS=1 cargo test -p fleet-tests --test docs cli_reference`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use clap::CommandFactory;

/// Setting this environment variable rewrites `docs/cli/` instead of comparing.
const REGENERATE: &str = "FLEET_REGENERATE_DOCS";

/// The repository's root directory.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// `fleet-node`'s command line: the node's flags, and `restore`, which the
/// binary takes as its first argument.
fn fleet_node_command() -> clap::Command {
    let restore = fleet_node::restore::RestoreArgs::command().name("restore");
    fleet_node::config::Args::command().subcommand(restore).args_conflicts_with_subcommands(true)
}

/// The reference page of one program, as its clap definition makes it.
fn reference(command: clap::Command) -> String {
    let name = command.get_name().to_string();
    let options =
        clap_markdown::MarkdownOptions::new().title(format!("`{name}` command-line reference")).show_footer(false);
    let body = clap_markdown::help_markdown_command_custom(&command, &options);
    format!(
        "<!-- Generated from the clap definitions by tests/tests/docs.rs: do not edit. \
         Regenerate with `{REGENERATE}=1 cargo test -p fleet-tests --test docs cli_reference`. -->\n\n{}\n",
        escape_angle_brackets(body.trim_end())
    )
}

/// `text` with each `<` outside code spans escaped, so that help texts such
/// as `node-<id>.pem` are not read as HTML tags (which GitHub hides).
fn escape_angle_brackets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '`' => in_code = !in_code,
            '<' if !in_code => out.push('\\'),
            _ => {}
        }
        out.push(c);
    }
    out
}

/// Every page of `docs/cli/` with the text the code generates for it.
fn cli_pages() -> Vec<(&'static str, String)> {
    vec![
        ("fleetctl.md", reference(fleetctl::Cli::command())),
        ("fleet-node.md", reference(fleet_node_command())),
        ("fleet-agent.md", reference(fleet_agent::config::Cli::command())),
        ("fleet-bench.md", reference(fleet_bench::cli::Cli::command())),
    ]
}

#[test]
fn cli_reference() {
    let dir = root().join("docs/cli");
    let regenerate = std::env::var_os(REGENERATE).is_some();
    let mut stale = Vec::new();
    for (file, text) in cli_pages() {
        let path = dir.join(file);
        if regenerate {
            std::fs::write(&path, &text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
            continue;
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        if checked_in != text {
            stale.push(format!("docs/cli/{file}"));
        }
    }
    assert!(
        stale.is_empty(),
        "the command-line reference differs from what the code generates: {}.\n\
         Regenerate it with `{REGENERATE}=1 cargo test -p fleet-tests --test docs cli_reference` and commit the result.",
        stale.join(", ")
    );
}

#[test]
fn markdown_links() {
    let root = root();
    let files = repository_files(&root, ".md");
    assert!(files.iter().any(|f| f.ends_with("README.md")), "no Markdown file found under {}", root.display());
    let mut anchors: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        for (line, target) in links(&text) {
            if let Some(problem) = check_link(&root, file, &target, &mut anchors) {
                let shown = file.strip_prefix(&root).unwrap_or(file).display();
                broken.push(format!("{shown}:{line}: ({target}) {problem}"));
            }
        }
    }
    assert!(broken.is_empty(), "Markdown links that lead nowhere:\n{}", broken.join("\n"));
}

#[test]
fn rule_ids_resolve() {
    let root = root();
    let spec: String = std::fs::read_dir(root.join("docs/spec"))
        .expect("docs/spec")
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    let defined = rule_ids(&spec);
    let prefixes: BTreeSet<&str> = defined.iter().filter_map(|id| id.split('-').next()).collect();
    assert!(!prefixes.is_empty(), "no rule ids found in docs/spec");
    let mut unknown = BTreeSet::new();
    for path in repository_files(&root, ".rs") {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for id in rule_ids(&text) {
            let cited = id.split('-').next().is_some_and(|p| prefixes.contains(p));
            if cited && !defined.contains(&id) {
                unknown.insert(format!("{id} ({})", path.strip_prefix(&root).unwrap_or(&path).display()));
            }
        }
    }
    assert!(unknown.is_empty(), "rule ids cited in the code but not defined in docs/spec: {unknown:?}");
}

/// Words of the form `AB-12` (two to four capitals, a hyphen, digits).
fn rule_ids(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
        let Some((prefix, number)) = word.split_once('-') else { continue };
        let prefix_ok = (2..=4).contains(&prefix.len()) && prefix.chars().all(|c| c.is_ascii_uppercase());
        if prefix_ok && !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()) {
            ids.insert(word.to_string());
        }
    }
    ids
}

/// Every file of the repository whose name ends with `suffix`, outside
/// build output and hidden directories (`.git`, `.fleet-local`...).
fn repository_files(root: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                let skipped = name.starts_with('.') || (dir == root && name.starts_with("target"));
                if !skipped {
                    dirs.push(path);
                }
            } else if name.ends_with(suffix) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The lines of a Markdown text outside fenced code blocks, with their
/// indexes (0-based).
fn prose_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fence: Option<String> = None;
    text.lines().enumerate().filter(move |(_, line)| {
        let trimmed = line.trim_start();
        if let Some(marker) = &fence {
            if trimmed.starts_with(marker.as_str()) {
                fence = None;
            }
            return false;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(trimmed[..3].to_string());
            return false;
        }
        true
    })
}

/// The destinations of a Markdown text's links and link definitions, with
/// their line numbers; code blocks and code spans are skipped.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in prose_lines(text) {
        let line = without_code_spans(line);
        if let Some(rest) = line.trim_start().strip_prefix('[') {
            if let Some((_, dest)) = rest.split_once("]: ") {
                found.push((i + 1, destination(dest)));
                continue;
            }
        }
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let mut depth = 1;
            let end = after
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map(|(j, _)| j)
                .unwrap_or(after.len());
            found.push((i + 1, destination(&after[..end])));
            rest = &after[end..];
        }
    }
    found
}

/// `line` with the text of its code spans (`` `...` ``) removed.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// A link's destination without its title (`(dest "title")`) or angle brackets.
fn destination(raw: &str) -> String {
    let raw = raw.trim();
    match raw.strip_prefix('<') {
        Some(inner) => inner.split('>').next().unwrap_or_default().to_string(),
        None => raw.split_whitespace().next().unwrap_or_default().to_string(),
    }
}

/// What is wrong with one link from `file`, if anything. Links with a
/// scheme (`https:`, `mailto:`...) are not followed.
fn check_link(
    root: &Path,
    file: &Path,
    target: &str,
    anchors: &mut BTreeMap<PathBuf, BTreeSet<String>>,
) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".to_string());
    }
    let has_scheme = target.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    if has_scheme {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let path = path.split('?').next().unwrap_or_default();
    let resolved = if path.is_empty() {
        file.to_path_buf()
    } else if let Some(from_root) = path.strip_prefix('/') {
        root.join(from_root)
    } else {
        file.parent().unwrap_or(root).join(path)
    };
    let resolved = normalize(&resolved);
    if !resolved.starts_with(root) {
        return Some("points outside the repository".to_string());
    }
    if !resolved.exists() {
        return Some(format!("{} does not exist", resolved.strip_prefix(root).unwrap_or(&resolved).display()));
    }
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if resolved.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let headings = anchors.entry(resolved.clone()).or_insert_with(|| {
        let text = std::fs::read_to_string(&resolved).unwrap_or_default();
        heading_anchors(&text)
    });
    (!headings.contains(&anchor.to_lowercase())).then(|| format!("no heading makes the anchor #{anchor}"))
}

/// `path` with its `.` and `..` components resolved, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The anchors GitHub gives the headings of a Markdown text: lower case,
/// punctuation dropped, spaces as hyphens, repeats numbered `-1`, `-2`...
fn heading_anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = line.strip_prefix('#') else { continue };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let slug = slug(&link_texts(heading.trim()));
        let mut anchor = slug.clone();
        let mut n = 0;
        while !anchors.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{slug}-{n}");
        }
    }
    anchors
}

/// Markdown links of a heading replaced by their text (`[a](b)` → `a`).
fn link_texts(heading: &str) -> String {
    let mut out = String::new();
    let mut rest = heading;
    while let Some(start) = rest.find('[') {
        let Some(mid) = rest[start..].find("](") else { break };
        let Some(end) = rest[start + mid..].find(')') else { break };
        out.push_str(&rest[..start]);
        out.push_str(&rest[start + 1..start + mid]);
        rest = &rest[start + mid + end + 1..];
    }
    out.push_str(rest);
    out
}

/// GitHub's slug of a heading's text.
fn slug(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn links_are_found_outside_code_only() {
    let text = "See [a](a.md) and [b](<b c.md> \"title\").\n`[no](x.md)`\n```\n[no](y.md)\n```\n[ref]: docs/z.md\n";
    let found: Vec<String> = links(text).into_iter().map(|(_, d)| d).collect();
    assert_eq!(found, ["a.md", "b c.md", "docs/z.md"]);
}

#[test]
fn anchors_follow_github() {
    let anchors =
        heading_anchors("# Operating the hub\n## `fleetctl get`\n## Tuning\n## Tuning\n### [Link](x.md) & more\n");
    let expected = ["operating-the-hub", "fleetctl-get", "tuning", "tuning-1", "link--more"];
    assert_eq!(anchors, expected.iter().map(|s| s.to_string()).collect());
}
