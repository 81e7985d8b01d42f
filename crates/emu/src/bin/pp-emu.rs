//! Stand-alone `emu` for manual use until `polyphony emu` lands: replays a trace on a testbed
//! instance and prints the per-class summary as JSON.
use clap::Parser;

#[derive(Parser)]
#[command(about = "Replay a flow trace on the namespace testbed and measure per-class FCT slowdowns")]
struct Cli {
    #[command(flatten)]
    args: emu::EmuArgs,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let s = emu::run_cli(&cli.args)?;
    println!("{}", serde_json::to_string_pretty(&s)?);
    Ok(())
}
