//! `completion bash|zsh|fish`: the shell completion script, generated from
//! the same command definition clap parses with.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, CompletionArgs, CompletionShell};
use crate::error::{Error, Result};
use crate::io::Io;

/// Prints the completion script for the shell asked for.
pub fn run(args: &CompletionArgs, io: &mut Io) -> Result<()> {
    io.out(&script(args.shell)?)
}

/// The completion script for `shell`.
pub fn script(shell: CompletionShell) -> Result<String> {
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut command = Cli::command();
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut command, "fleetctl", &mut bytes);
    String::from_utf8(bytes).map_err(|e| Error::Usage(format!("completion script is not UTF-8: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_gets_a_script_naming_the_commands() {
        for (shell, marker) in [
            (CompletionShell::Bash, "complete -F _fleetctl"),
            (CompletionShell::Zsh, "#compdef fleetctl"),
            (CompletionShell::Fish, "complete -c fleetctl"),
        ] {
            let text = script(shell).unwrap();
            assert!(text.contains(marker), "{shell:?}: no {marker:?}");
            for command in ["apply", "get", "plan", "version", "completion"] {
                assert!(text.contains(command), "{shell:?}: no {command:?}");
            }
        }
    }
}
