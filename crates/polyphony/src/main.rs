//! The `polyphony` executable: parses the command line, sets up logging, runs one subcommand and
//! maps failures to exit codes (2 = bad arguments or configuration, nothing applied; 1 = runtime).

use polyphony::cli::{one_line, Cli, Command};
use polyphony::Failure;

fn main() {
    let cli = match Cli::try_parse_args(std::env::args_os()) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                std::process::exit(if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    2
                } else {
                    0
                });
            }
            eprintln!("{}", one_line(&e));
            std::process::exit(2);
        }
    };
    init_logging(cli.log.as_deref());
    if let Err(f) = run(cli.command) {
        let msg = f.to_string().replace('\n', " ");
        eprintln!("polyphony: {msg}");
        std::process::exit(f.exit_code());
    }
}

fn init_logging(filter: Option<&str>) {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = filter
        .map(EnvFilter::new)
        .or_else(|| EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    // Colour only on a terminal: under systemd the escape codes would land in the journal.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

fn run(cmd: Command) -> Result<(), Failure> {
    match cmd {
        Command::Daemon(a) => polyphony::daemon::main(a),
        Command::Demo(a) => polyphony::demo::main(a),
        Command::Simulate(a) => polyphony::simulate::main(a),
        Command::Recommend(a) => polyphony::recommend::main(a),
        Command::Testbed(a) => polyphony::delegate::testbed(&a),
        Command::Emu(a) => polyphony::delegate::emu(&a),
        Command::Workfeed { command } => polyphony::delegate::workfeed(command),
    }
}
