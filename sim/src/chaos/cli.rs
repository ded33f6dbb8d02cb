//! The plain build's `sim` command line: `sim chaos`, a scenario against real broker processes
//! (the simulated commands need the simulation flag: `cargo sim ...`).

use super::{run, summary, verdicts, Options};
use crate::scenario::Scenario;
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(name = "sim", about = "Seedlog's scenarios against real broker processes (the simulator itself: `cargo sim`)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario against real `broker` processes on loopback ports with real faults
    /// (signals), judge the history with the simulator's checkers, and print the verdicts and
    /// a JSON summary line (acknowledged, lost, duplicated). Exits 0 only when every judged
    /// checker holds.
    Chaos {
        /// The scenario file.
        scenario: PathBuf,
        /// Seed of the fault schedule (the same faults, at the same times, as `cargo sim run`
        /// draws for it).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The `broker` binary (default: the one beside this `sim`, as `cargo build --release`
        /// leaves them).
        #[arg(long)]
        broker: Option<PathBuf>,
        /// The run's directory, made afresh: the brokers' data directories and logs, and the
        /// trace (default: target/chaos/NAME-SEED).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// `loopback` (any user; process faults only) or `namespaces` (root: each broker in a
        /// network namespace of its own, so `isolate`, `isolate_in` and `isolate_out` are done
        /// too).
        #[arg(long, default_value = "loopback")]
        net: String,
    },
}

pub fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Chaos { scenario, seed, broker, dir, net } => match chaos(&scenario, seed, broker, dir, &net) {
            Ok(true) => 0,
            Ok(false) => 1,
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        },
    };
    std::process::exit(code);
}

fn chaos(path: &Path, seed: u64, broker: Option<PathBuf>, dir: Option<PathBuf>, net: &str) -> Result<bool, String> {
    let namespaces = match net {
        "loopback" => false,
        "namespaces" => true,
        other => return Err(format!("--net {other}: loopback or namespaces")),
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let s = Scenario::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let broker = match broker {
        Some(b) => b,
        None => std::env::current_exe().map_err(|e| e.to_string())?.with_file_name("broker"),
    };
    if !broker.is_file() {
        return Err(format!("no broker binary at {} (build it: cargo build --release -p broker-core --bin broker, or give --broker)", broker.display()));
    }
    let dir = dir.unwrap_or_else(|| PathBuf::from(format!("target/chaos/{}-{seed}", s.name)));
    let wall = std::time::Instant::now();
    let r = run(&s, &path.display().to_string(), seed, &Options { broker, dir: dir.clone(), namespaces })?;
    println!("scenario {} seed={seed} (real processes)", s.name);
    for (k, v) in &r.derived {
        println!("  derived {k} = {v}");
    }
    let acked = r.history.writes.iter().filter(|w| w.acknowledged().is_some()).count();
    println!("  {} writes ({acked} acknowledged), {} records read, {} final records", r.history.writes.len(), r.history.reads.len(), r.history.final_read.values().map(Vec::len).sum::<usize>());
    for (name, verdict) in verdicts(&r) {
        println!("  {name:<22} {verdict}");
    }
    for v in r.violations.iter().take(10) {
        println!("    {v}");
    }
    println!("  ran {:.1} s", wall.elapsed().as_secs_f64());
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, r.trace.to_jsonl()).map_err(|e| format!("{}: {e}", trace.display()))?;
    println!("  trace written to {} (the brokers' logs beside it)", trace.display());
    println!("{}", summary(&s, seed, &r));
    Ok(r.passed())
}
