//! The `hostmax` binary: watches signals, parses the command line and runs it
//! ([`hostmax::run`]), then maps the outcome to an exit code.
//!
//! Exit codes: [`hostmax::exit_code`] (`--help` and `--version` exit 0, clap's usage errors 2;
//! a command that ran no engine, merge or doctor, exits 128 + N after its output when signal
//! N came).
//!
//! Every error is printed as ONE line on stderr, `hostmax: <message>`, and nothing goes to
//! stdout.

#![forbid(unsafe_code)]
// Text goes through `hostmax::stdio` (`errln!`), which cannot panic on a closed stream.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::Parser;
use hostmax::args::Cli;
use hostmax::exit_code;

fn main() -> ExitCode {
    // A panic is a bug; still, say so on one line like every other error.
    std::panic::set_hook(Box::new(|info| {
        hostmax::errln!(
            "hostmax: internal error (a bug): {}",
            one_line(&info.to_string())
        );
    }));
    // From here to the last byte of output a SIGINT, SIGTERM, SIGHUP or SIGQUIT is caught: it
    // stops the run in progress (or the next one, which still reports), never the default
    // kill mid-check or mid-write; a second one exits at once.
    let signals = hostmax::signals::watch();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return clap_exit(err),
    };
    match hostmax::run(cli) {
        // A command that ran no engine (merge, doctor) finished its output; it still ends as
        // interrupted.
        Ok(exit_code::OK) if signals.signal() != 0 => {
            exit_code::status(exit_code::interrupted(signals.signal()))
        }
        Ok(code) => exit_code::status(code),
        Err(err) => {
            // A run a signal called off before it began has said so on stderr already.
            if !err.chain().any(|e| e.is::<hostmax::error::CalledOff>()) {
                hostmax::errln!("hostmax: {}", hostmax::error::error_line(&err));
            }
            exit_code::status(exit_code::for_error(&err))
        }
    }
}

/// Collapses a message onto one line.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `--help` and `--version` print as clap prints them and exit 0; every usage error becomes
/// one line (clap's usage block and tips dropped) and exit 2.
fn clap_exit(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        // Printing help can only fail on a closed stdout; there is nothing better to do then.
        let _ = err.print();
        return ExitCode::SUCCESS;
    }
    let rendered = err.render().to_string();
    let kept: Vec<&str> = rendered
        .split("\n\n")
        .filter(|para| {
            let p = para.trim_start();
            !p.is_empty() && !p.starts_with("Usage:") && !p.starts_with("For more information")
        })
        .collect();
    let text = one_line(&kept.join("; "));
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    let argv: Vec<String> = std::env::args().skip(1).collect();
    // A device where a subcommand or option was expected: the likely slip of a fio user.
    let stray = err
        .get(clap::error::ContextKind::InvalidSubcommand)
        .or_else(|| err.get(clap::error::ContextKind::InvalidArg))
        .map(|v| v.to_string())
        .filter(|v| v.starts_with("/dev/") || std::path::Path::new(v).exists());
    if let Some(path) = stray {
        hostmax::errln!(
            "hostmax: '{path}' is not a subcommand or option: name devices with --devices (hostmax --devices {path} ...); see 'hostmax --help'"
        );
        return exit_code::status(exit_code::BAD_INPUT);
    }
    hostmax::errln!("hostmax: {text}; see '{}'", help_command(&argv));
    exit_code::status(exit_code::BAD_INPUT)
}

/// The help that fits the command line: the subcommand's (`hostmax suite --help`) when one
/// was given, else the top level's.
fn help_command(argv: &[String]) -> String {
    use clap::CommandFactory;
    let cli = Cli::command();
    let sub = argv
        .iter()
        .find(|a| !a.starts_with('-'))
        .filter(|a| cli.get_subcommands().any(|s| s.get_name() == a.as_str()));
    match sub {
        Some(name) => format!("hostmax {name} --help"),
        None => "hostmax --help".to_string(),
    }
}
