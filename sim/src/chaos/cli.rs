//! The plain build's `sim` command line: `sim chaos`, a scenario against real broker processes
//! over one seed or many (a shard of them), and `sim compare`, runs of both worlds side by side
//! (the simulated commands need the simulation flag: `cargo sim ...`).

use super::{run, verdicts, Options};
use crate::scenario::Scenario;
use std::io::Write;
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
    /// Run a scenario against real `broker` processes with real faults (signals; network cuts
    /// with --net namespaces), judge the history with the simulator's checkers, and print the
    /// verdicts and a JSON line per run (acknowledged, lost, duplicated). Exits 0 only when
    /// every judged checker holds in every run.
    Chaos {
        /// The scenario file.
        scenario: PathBuf,
        /// Seed of the fault schedule (the same faults, at the same times, as `cargo sim run`
        /// draws for it).
        #[arg(long, default_value_t = 0, conflicts_with = "seeds")]
        seed: u64,
        /// Many seeds, as A..B (B exclusive), one run after another; with --shard, only this
        /// shard's.
        #[arg(long)]
        seeds: Option<String>,
        /// Run only shard i of N (seed % N == i), as `i/N`, to spread seeds over machines.
        #[arg(long)]
        shard: Option<String>,
        /// Append each run's JSON line to this file (what `sim compare` reads).
        #[arg(long)]
        jsonl: Option<PathBuf>,
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
    /// Put runs of both worlds side by side: every run line of the JSON-lines files given (a
    /// simulated sweep's `--summary`, `sim chaos --jsonl`), one row per scenario and world:
    /// runs, failed, acknowledged, lost, runs with loss, duplicated.
    Compare {
        files: Vec<PathBuf>,
    },
    /// The durability matrix's rows (`cargo sim matrix`) against real processes: each row whose
    /// faults all have a real counterpart runs over the seeds, and its verdict is judged as the
    /// simulated matrix judges it (no acknowledged loss where none is promised, some loss where
    /// loss is allowed); the other rows say why they were not run.
    Matrix {
        #[arg(long, default_value = "0..1")]
        seeds: String,
        /// Only rows whose scenario name contains this.
        #[arg(long)]
        row: Option<String>,
        /// `loopback` or `namespaces` (root; rows with network cuts run too).
        #[arg(long, default_value = "loopback")]
        net: String,
        /// The `broker` binary (default: the one beside this `sim`).
        #[arg(long)]
        broker: Option<PathBuf>,
        /// Append each run's JSON line here (for `sim compare` beside a simulated sweep of the
        /// rows: `cargo sim matrix --dump DIR`, then `cargo sim sweep DIR --summary FILE`).
        #[arg(long)]
        jsonl: Option<PathBuf>,
        /// A simulated sweep's summary of the rows (`cargo sim matrix --dump DIR`, then `cargo
        /// sim sweep DIR --seeds A..B --summary FILE`): its figures are printed beside each
        /// row's real ones.
        #[arg(long)]
        sim: Option<PathBuf>,
    },
}

pub fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Chaos { scenario, seed, seeds, shard, jsonl, broker, dir, net } => exit_code(chaos_seeds(&scenario, seed, seeds.as_deref(), shard.as_deref(), jsonl.as_deref(), broker, dir, &net)),
        Command::Compare { files } => exit_code(compare(&files).map(|()| true)),
        Command::Matrix { seeds, row, net, broker, jsonl, sim } => exit_code(matrix(&seeds, row.as_deref(), &net, broker, jsonl.as_deref(), sim.as_deref())),
    };
    std::process::exit(code);
}

fn exit_code(r: Result<bool, String>) -> i32 {
    match r {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// `A..B` (B exclusive) or one seed.
fn seed_range(text: &str) -> Result<std::ops::Range<u64>, String> {
    let bad = || format!("--seeds {text}: A..B or a single seed");
    match text.split_once("..") {
        Some((a, b)) => Ok(a.parse().map_err(|_| bad())?..b.parse().map_err(|_| bad())?),
        None => text.parse::<u64>().map(|s| s..s + 1).map_err(|_| bad()),
    }
}

/// `i/N` with i < N.
fn shard_of(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("--shard {text}: i/N with i < N");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (i, n): (u64, u64) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// Every seed asked for (this shard's), one run after another; true when all passed.
#[allow(clippy::too_many_arguments)]
fn chaos_seeds(path: &Path, seed: u64, seeds: Option<&str>, shard: Option<&str>, jsonl: Option<&Path>, broker: Option<PathBuf>, dir: Option<PathBuf>, net: &str) -> Result<bool, String> {
    let range = seeds.map(seed_range).transpose()?.unwrap_or(seed..seed + 1);
    let shard = shard.map(shard_of).transpose()?;
    let chosen: Vec<u64> = range.filter(|s| shard.is_none_or(|(i, n)| s % n == i)).collect();
    if chosen.is_empty() {
        return Err("no seed to run (an empty range, or none in this shard)".into());
    }
    let mut all = true;
    for &seed in &chosen {
        // One directory per run when there are several.
        let dir = dir.clone().map(|d| if chosen.len() > 1 { d.join(format!("seed-{seed}")) } else { d });
        let (passed, line) = chaos(path, seed, broker.clone(), dir, net)?;
        all &= passed;
        append(jsonl, &line)?;
    }
    Ok(all)
}

fn compare(files: &[PathBuf]) -> Result<(), String> {
    let mut lines = Vec::new();
    for f in files {
        lines.extend(read_lines(f)?);
    }
    print!("{}", crate::worlds::compare(&lines));
    Ok(())
}

/// Every JSON line of a file.
fn read_lines(f: &Path) -> Result<Vec<serde_json::Value>, String> {
    let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(n, l)| serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", f.display(), n + 1))).collect()
}

/// `--net`: whether brokers get namespaces.
fn namespaces(net: &str) -> Result<bool, String> {
    match net {
        "loopback" => Ok(false),
        "namespaces" => Ok(true),
        other => Err(format!("--net {other}: loopback or namespaces")),
    }
}

/// The `broker` binary: as given, or the one beside this `sim`.
fn broker_bin(broker: Option<PathBuf>) -> Result<PathBuf, String> {
    let broker = match broker {
        Some(b) => b,
        None => std::env::current_exe().map_err(|e| e.to_string())?.with_file_name("broker"),
    };
    match broker.is_file() {
        true => Ok(broker),
        false => Err(format!("no broker binary at {} (build it: cargo build --release -p broker-core --bin broker, or give --broker)", broker.display())),
    }
}

fn append(file: Option<&Path>, line: &serde_json::Value) -> Result<(), String> {
    let Some(file) = file else { return Ok(()) };
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    writeln!(f, "{line}").map_err(|e| format!("{}: {e}", file.display()))
}

/// The matrix's rows that can run for real, over `seeds`; true when every row run holds.
fn matrix(seeds: &str, only: Option<&str>, net: &str, broker: Option<PathBuf>, jsonl: Option<&Path>, sim: Option<&Path>) -> Result<bool, String> {
    let (seeds, namespaces, broker) = (seed_range(seeds)?, namespaces(net)?, broker_bin(broker)?);
    if seeds.is_empty() {
        return Err("no seed to run: an empty range".into());
    }
    let simulated = match sim {
        Some(f) => read_lines(f)?,
        None => Vec::new(),
    };
    // A row's simulated figures, from the summary's lines of its scenario.
    let sim_of = |name: &str| -> String {
        let runs: Vec<&serde_json::Value> = simulated.iter().filter(|l| l["scenario"] == name && l["seed"].is_u64() && l["world"] != "real").collect();
        let n = |k: &str| runs.iter().map(|l| l[k].as_u64().unwrap_or(0)).sum::<u64>();
        match runs.is_empty() {
            true => String::new(),
            false => format!("sim: {} runs, {} acknowledged, {} lost; ", runs.len(), n("acknowledged"), n("lost")),
        }
    };
    let mut all = true;
    for row in crate::matrix::rows().into_iter().filter(|r| only.is_none_or(|o| r.scenario.name.contains(o))) {
        let name = &row.scenario.name;
        let promise = if row.loss_allowed { "loss allowed" } else { "no loss" };
        if let Some(why) = super::runnable(&row.scenario).err().or_else(|| super::undone_fault(&row.scenario, namespaces)) {
            println!("{name:<40} {promise:<12} not run for real: {why}");
            continue;
        }
        let mut measured = Vec::new();
        for seed in seeds.clone() {
            let dir = PathBuf::from(format!("target/chaos/{name}-{seed}"));
            let r = run(&row.scenario, &format!("<matrix:{name}>"), seed, &Options { broker: broker.clone(), dir, namespaces })?;
            append(jsonl, &crate::worlds::line("real", name, seed, &r))?;
            measured.push(crate::matrix::measured(&r, seed));
        }
        let verdict = crate::matrix::Verdict::of(&row, &measured);
        let (acked, lost): (usize, usize) = measured.iter().fold((0, 0), |(a, l), m| (a + m.acknowledged, l + m.lost));
        let approximated = row.scenario.faults.iter().any(|f| f.kind == crate::scenario::FaultKind::PowerLoss);
        // A power loss's losses need the page cache dropped, which a SIGKILL does not do: a
        // row that shows loss only through them cannot show it here (a modelling gap, said).
        let text = match (verdict, approximated) {
            (crate::matrix::Verdict::NoLossSeen, true) => "no loss seen: its losses need a power loss, which a SIGKILL does not make (the page cache survives)",
            (v, _) => {
                all &= v.ok();
                v.text()
            }
        };
        let note = if approximated { " (power loss approximated by SIGKILL)" } else { "" };
        println!("{name:<40} {promise:<12} {}real: {} runs, {acked} acknowledged, {lost} lost: {text}{note}", sim_of(name), measured.len());
        for m in measured.iter().filter(|m| !m.other.is_empty()).take(1) {
            println!("    seed {}: {}", m.seed, m.other[0]);
        }
    }
    Ok(all)
}

/// One run: its verdicts printed, its trace written; whether it passed, and its JSON line.
fn chaos(path: &Path, seed: u64, broker: Option<PathBuf>, dir: Option<PathBuf>, net: &str) -> Result<(bool, serde_json::Value), String> {
    let namespaces = namespaces(net)?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let s = Scenario::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let broker = broker_bin(broker)?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(format!("target/chaos/{}-{seed}", s.name)));
    let wall = std::time::Instant::now();
    let r = run(&s, &path.display().to_string(), seed, &Options { broker, dir: dir.clone(), namespaces })?;
    println!("scenario {} seed={seed} (real processes)", s.name);
    for (k, v) in &r.derived {
        println!("  derived {k} = {v}");
    }
    let acked = r.history.writes.iter().filter(|w| w.acknowledged().is_some()).count();
    println!("  {} writes ({acked} acknowledged), {} records read, {} final records", r.history.writes.len(), r.history.reads.len(), r.history.final_read.values().map(Vec::len).sum::<usize>());
    for (name, verdict) in verdicts(&s, &r) {
        println!("  {name:<22} {verdict}");
    }
    for v in r.violations.iter().take(10) {
        println!("    {v}");
    }
    println!("  ran {:.1} s", wall.elapsed().as_secs_f64());
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, r.trace.to_jsonl()).map_err(|e| format!("{}: {e}", trace.display()))?;
    println!("  trace written to {} (the brokers' logs beside it)", trace.display());
    let line = crate::worlds::line("real", &s.name, seed, &r);
    println!("{line}");
    Ok((r.passed(), line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_and_shards_read_as_sweeps_read_them() {
        assert_eq!(seed_range("3..7"), Ok(3..7));
        assert_eq!(seed_range("5"), Ok(5..6));
        assert!(seed_range("a..b").is_err());
        assert_eq!(shard_of("1/4"), Ok((1, 4)));
        assert!(shard_of("4/4").is_err() && shard_of("1").is_err());
    }
}
