//! Stand-alone `testbed up|down|status` for manual use until `polyphony testbed` lands.
use clap::Parser;

#[derive(Parser)]
#[command(about = "Build, inspect or remove the namespace testbed")]
struct Cli {
    #[command(flatten)]
    args: testbed::TestbedArgs,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_writer(std::io::stderr).init();
    let cli = Cli::parse();
    println!("{}", testbed::run_cli(&cli.args)?);
    Ok(())
}
