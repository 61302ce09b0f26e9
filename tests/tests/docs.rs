//! Checks of the documentation that need no hub: the command-line
//! reference in `docs/cli/` is exactly what the programs' clap definitions
//! generate.
//!
//! After changing a flag or a help text, regenerate the reference with
//! `FLEET_REGENERATE_DOCS=1 cargo test -p fleet-tests --test docs cli_reference`.

use std::path::{Path, PathBuf};

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
