//! `sim`: the simulator CLI. Only meaningful built with `--cfg madsim` (`cargo sim ...`); the
//! plain build is a stub that says so, keeping `cargo test --workspace` fast.

#[cfg(not(madsim))]
fn main() {
    eprintln!("sim must be built with the simulation flag: run it as `cargo sim <command>` (see README.md)");
    std::process::exit(2);
}

#[cfg(madsim)]
fn main() {
    cli::main()
}

#[cfg(madsim)]
mod cli {
    use clap::{Parser, Subcommand};
    use sim::crash::{crash_rounds, digest, node_rounds};
    use std::ops::Range;

    #[derive(Parser)]
    #[command(name = "sim", about = "Seedlog simulator (deterministic: same arguments, same output)")]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
    }

    #[derive(Subcommand)]
    enum Cmd {
        /// Crash rounds of the partition log on SimDisk: random appends, flushes, checkpoints,
        /// rolls and retention, power loss, recovery, invariant checks.
        CrashLog {
            /// Seeds to run, as A..B (B exclusive) or a single seed.
            #[arg(long, default_value = "0..100", value_parser = parse_seeds)]
            seeds: Range<u64>,
            /// Crash/recover rounds per seed.
            #[arg(long, default_value_t = 12)]
            rounds: usize,
            /// Run the log inside madsim nodes that are killed mid-write (instead of crashing
            /// between calls).
            #[arg(long)]
            nodes: bool,
            /// Print each recovery report and crash outcome.
            #[arg(long, short)]
            verbose: bool,
        },
    }

    fn parse_seeds(s: &str) -> Result<Range<u64>, String> {
        let num = |t: &str| t.trim().parse::<u64>().map_err(|_| format!("seed range `{s}`: `{t}` is not a number"));
        match s.split_once("..") {
            Some((a, b)) => {
                let r = num(a)?..num(b)?;
                if r.is_empty() {
                    return Err(format!("seed range `{s}` is empty"));
                }
                Ok(r)
            }
            None => num(s).map(|a| a..a + 1),
        }
    }

    pub fn main() {
        let Cmd::CrashLog { seeds, rounds, nodes, verbose } = Cli::parse().cmd;
        let mode = if nodes { "madsim nodes, kill + power loss" } else { "between calls, power loss or clean" };
        println!("crash-log: seeds {}..{}, {rounds} rounds each ({mode})", seeds.start, seeds.end);
        let mut failed = 0;
        let mut combined = Vec::new();
        for seed in seeds.clone() {
            let result = if nodes { node_rounds(seed, rounds) } else { crash_rounds(seed, rounds, verbose) };
            match result {
                Ok(log) => combined.push((seed as i64, digest(&log).to_be_bytes().to_vec())),
                Err(e) => {
                    failed += 1;
                    println!("FAIL {e}");
                    let flag = if nodes { " --nodes" } else { "" };
                    println!("  reproduce: cargo sim crash-log --seeds {seed} --rounds {rounds}{flag} --verbose");
                }
            }
        }
        let total = seeds.end - seeds.start;
        println!("{} of {total} seeds passed; digest {:016x}", total - failed, digest(&combined));
        if failed > 0 {
            std::process::exit(1);
        }
    }
}
