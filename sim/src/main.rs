//! `sim`: the simulator CLI, built with `--cfg madsim` (`cargo sim ...`). The plain build runs
//! scenarios against real broker processes instead (`sim chaos`, `sim::chaos::cli`).

#[cfg(not(madsim))]
fn main() {
    sim::chaos::cli::main()
}

/// Log lines stamped with simulated time, as the trace is.
#[cfg(madsim)]
struct SimTime;

#[cfg(madsim)]
impl tracing_subscriber::fmt::time::FormatTime for SimTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        write!(w, "{:>10.3}", now.as_secs_f64() % 100_000.0)
    }
}

#[cfg(madsim)]
fn main() {
    // The brokers' own log lines (the simulated time is in the trace): `SEEDLOG_LOG=info`.
    if let Ok(filter) = std::env::var("SEEDLOG_LOG") {
        tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::new(filter)).with_timer(SimTime).with_ansi(false).with_writer(std::io::stderr).init();
    }
    cli::main()
}

#[cfg(madsim)]
mod cli {
    use broker_core::broker::PlantedBug;
    use clap::{Parser, Subcommand};
    use sim::cluster;
    use sim::crash::{crash_rounds, deferred_crash_rounds, digest, node_rounds};
    use sim::scenario::Scenario;
    use sim::sweep;
    use std::ops::Range;
    use std::path::{Path, PathBuf};

    #[derive(Parser)]
    #[command(name = "sim", about = "Seedlog simulator (deterministic: same arguments, same output)")]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
    }

    #[derive(Subcommand)]
    enum Cmd {
        /// Run one scenario with one seed: derived parameters, checker verdicts, digest.
        /// Exit code 1 on a violation.
        Run {
            scenario: PathBuf,
            #[arg(long, default_value_t = 0)]
            seed: u64,
            /// Write the trace (JSON Lines) here.
            #[arg(long)]
            trace: Option<PathBuf>,
            /// Print the consumer groups' rebalance timeline.
            #[arg(long)]
            timeline: bool,
            /// Plant a known broker bug (a `PlantedBug` variant, e.g. CleanerKeepsFirstValue),
            /// as the planted-bug tests do, to see what the checkers make of it.
            #[arg(long)]
            plant: Option<String>,
            /// Run with this `broker.transaction_version` (1 classic, 2 KIP-890), whatever the
            /// scenario says.
            #[arg(long, value_parser = clap::value_parser!(i64).range(1..=2))]
            transaction_version: Option<i64>,
        },
        /// Run scenarios (files, or every scenario below a directory) over a range of seeds.
        Sweep {
            #[arg(required = true)]
            targets: Vec<PathBuf>,
            /// Seeds as A..B (B exclusive) or a single seed.
            #[arg(long, default_value = "0..100", value_parser = parse_seeds)]
            seeds: Range<u64>,
            /// Plant a known broker bug in every run (see `run --plant`): how many seeds find it?
            #[arg(long)]
            plant: Option<String>,
            #[command(flatten)]
            args: SweepArgs,
        },
        /// Re-run a trace's scenario and seed; report the first diverging line or "identical".
        Replay { trace: PathBuf },
        /// Shrink a failing run to a small scenario that still fails the same checker: the
        /// seed's faults written out as fixed ones, then delta debugging over them, shorter
        /// faults and safety phase, lower rates, fewer clients and brokers. Writes the result
        /// as scenario TOML whose header says what was removed and how to reproduce it.
        Shrink {
            /// A scenario file (with --seed, --plant) or a trace, whose header names the
            /// scenario, the seed and the planted bug.
            input: PathBuf,
            #[arg(long)]
            seed: Option<u64>,
            /// Plant a known broker bug (as `run --plant`).
            #[arg(long)]
            plant: Option<String>,
            /// The checker that must keep failing (default: the first failing one).
            #[arg(long)]
            checker: Option<String>,
            /// Where the shrunk scenario goes (default: traces/<name>-<seed>-shrunk.toml).
            #[arg(long, short)]
            out: Option<PathBuf>,
            /// Most simulated runs the search may spend.
            #[arg(long, default_value_t = sim::shrink::shrink_runs_max)]
            max_runs: usize,
        },
        /// The durability matrix, measured: acknowledged losses per acks × flush × fault row.
        /// Rows that promise no loss fail on any; loss-allowed rows fail if no seed shows loss.
        /// Exit code 1 on a failing row; its scenario is written to `--traces` to reproduce.
        Matrix {
            #[arg(long, default_value = "0..50", value_parser = parse_seeds)]
            seeds: Range<u64>,
            #[arg(long, default_value_t = 2)]
            jobs: usize,
            /// Only rows whose scenario name contains this (e.g. `unclean`, `1broker`).
            #[arg(long)]
            row: Option<String>,
            /// Write every selected row's scenario as TOML into this directory (for `sim run`).
            #[arg(long)]
            dump: Option<PathBuf>,
            /// Where a failing row's scenario goes.
            #[arg(long, default_value = "traces")]
            traces: PathBuf,
            /// Plant a known broker bug in every run (see `run --plant`).
            #[arg(long)]
            plant: Option<String>,
        },
        /// A trace as a space-time diagram: one self-contained HTML page (no network), a lane
        /// per node and client, faults, leader changes, acknowledged and lost writes, and the
        /// checkers' violations with their causal past.
        View {
            trace: PathBuf,
            /// Where the page goes (default: the trace's path with `.html`).
            #[arg(long, short)]
            out: Option<PathBuf>,
        },
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
            /// Crash a compacted log inside cleaning passes instead (sim::crash_clean): keyed
            /// appends, passes that die at a random disk call, power loss, recovery.
            #[arg(long, conflicts_with = "nodes")]
            clean: bool,
            /// Run the log as the broker does: its writes, syncs and truncations (a follower's,
            /// drawn now and then) are jobs that run late, out of order or never
            /// (sim::crash::deferred_crash_rounds). With --clean: syncs, writes, cleaning steps,
            /// swaps are jobs, deaths inside them too (sim::crash_clean::deferred_clean_rounds).
            #[arg(long, conflicts_with = "nodes")]
            deferred: bool,
            /// Print each recovery report and crash outcome.
            #[arg(long, short)]
            verbose: bool,
        },
    }

    #[derive(clap::Args)]
    struct SweepArgs {
        /// Parallel runs.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Run only shard i of N (seed % N == i), as `i/N`, to spread seeds over machines.
        #[arg(long, value_parser = parse_shard)]
        shard: Option<(u64, u64)>,
        /// Where failing seeds' traces go.
        #[arg(long, default_value = "traces")]
        traces: PathBuf,
        /// Stop sweeping a scenario at its first failing seed (with `--plant`: seeds to find).
        #[arg(long)]
        until_found: bool,
        /// Start no run after this many seconds of wall time (runs go seed-major, so every
        /// scenario has run over the same leading seeds when the budget ends).
        #[arg(long)]
        budget_secs: Option<u64>,
        /// Write a JSON-lines summary here: one line per run (scenario, seed, passed, every
        /// checker that fired), then one for the sweep.
        #[arg(long)]
        summary: Option<PathBuf>,
        /// Run every scenario with this `broker.transaction_version` (1 classic, 2 KIP-890):
        /// `scenarios/anomalies` with 2 must show nothing.
        #[arg(long, value_parser = clap::value_parser!(i64).range(1..=2))]
        transaction_version: Option<i64>,
    }

    fn parse_shard(s: &str) -> Result<(u64, u64), String> {
        let (i, n) = s.split_once('/').ok_or_else(|| format!("shard `{s}`: expected i/N"))?;
        let (i, n): (u64, u64) = (i.parse().map_err(|_| format!("shard `{s}`: bad i"))?, n.parse().map_err(|_| format!("shard `{s}`: bad N"))?);
        if n == 0 || i >= n {
            return Err(format!("shard `{s}`: need 0 <= i < N"));
        }
        Ok((i, n))
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

    fn load(path: &Path) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Scenario::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn main() {
        let result = match Cli::parse().cmd {
            Cmd::Run { scenario, seed, trace, timeline, plant, transaction_version } => run(&scenario, seed, trace.as_deref(), timeline, plant.as_deref(), transaction_version),
            Cmd::Sweep { targets, seeds, plant, args } => planted(plant.as_deref()).and_then(|bug| sweep(&targets, seeds, args, bug)),
            Cmd::Replay { trace } => replay(&trace),
            Cmd::Shrink { input, seed, plant, checker, out, max_runs } => shrink(&input, seed, plant.as_deref(), checker, out, max_runs),
            Cmd::Matrix { seeds, jobs, row, dump, traces, plant } => planted(plant.as_deref()).and_then(|bug| matrix(seeds, jobs, row.as_deref(), dump.as_deref(), &traces, bug)),
            Cmd::CrashLog { seeds, rounds, clean: true, deferred, verbose, .. } => crash_clean(seeds, rounds, deferred, verbose),
            Cmd::CrashLog { seeds, rounds, nodes, deferred, verbose, .. } => crash_log(seeds, rounds, nodes, deferred, verbose),
            Cmd::View { trace, out } => view(&trace, out.as_deref()),
        };
        match result {
            Ok(true) => {}
            Ok(false) => std::process::exit(1),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        }
    }

    /// The bug `--plant NAME` names.
    fn planted(plant: Option<&str>) -> Result<Option<PlantedBug>, String> {
        match plant {
            Some(name) => Ok(Some(PlantedBug::named(name).ok_or_else(|| format!("--plant {name}: no such planted bug; one of {:?}", PlantedBug::ALL))?)),
            None => Ok(None),
        }
    }

    fn run(path: &Path, seed: u64, trace: Option<&Path>, timeline: bool, plant: Option<&str>, transaction_version: Option<i64>) -> Result<bool, String> {
        let mut s = load(path)?;
        if transaction_version.is_some() {
            s.broker.transaction_version = transaction_version;
        }
        let bug = planted(plant)?;
        let wall = std::time::Instant::now();
        let r = cluster::run(&s, &path.display().to_string(), seed, bug)?;
        let secs = wall.elapsed().as_secs_f64();
        println!("scenario {} seed={seed}", s.name);
        for (k, v) in &r.derived {
            println!("  derived {k} = {v}");
        }
        // acks=0 writes hear nothing back: "sent", never "acknowledged".
        let acked = r.history.writes.iter().filter(|w| w.acknowledged().is_some()).count();
        let sent = r.history.writes.iter().filter(|w| w.acks == 0 && matches!(w.outcome, sim::history::Outcome::Ok(_))).count();
        let sent = if sent > 0 { format!(", {sent} sent with acks=0") } else { String::new() };
        println!("  {} writes ({acked} acknowledged{sent}), {} records read, {} final records", r.history.writes.len(), r.history.reads.len(), r.history.final_read.values().map(Vec::len).sum::<usize>());
        if !r.history.group_events.is_empty() {
            let acked = r.history.commits.iter().filter(|c| matches!(c.outcome, sim::history::Outcome::Ok(_))).count();
            println!("  {} group events, {} commits ({acked} acknowledged)", r.history.group_events.len(), r.history.commits.len());
        }
        if timeline {
            print!("{}", sim::rebalances::timeline(&r.history));
        }
        let replicas: Vec<usize> = r.history.replica_logs.values().flat_map(|by_broker| by_broker.values().map(Vec::len)).collect();
        println!("  {} replica logs read from the brokers' disks, {} records in all", replicas.len(), replicas.iter().sum::<usize>());
        for (name, _) in sim::checkers::CHECKERS {
            let n = r.violations.iter().filter(|v| v.checker == *name).count();
            let a = r.allowed.iter().filter(|v| v.checker == *name).count();
            let x = r.anomalies.iter().filter(|v| v.checker == *name).count();
            let verdict = match (n, a, x) {
                (0, 0, 0) => "ok".to_string(),
                (0, 0, x) => format!("ANOMALY SHOWN ({x}, expected by expect.anomaly)"),
                (0, a, _) => format!("ok ({a} losses allowed by expect.loss_allowed)"),
                (n, _, _) => format!("VIOLATED ({n})"),
            };
            println!("  {name:<22} {verdict}");
        }
        for v in r.violations.iter().chain(&r.anomalies).take(10) {
            println!("    {v}");
        }
        println!("  simulated {:.1} s in {secs:.2} s wall ({:.0}x)", r.simulated_ms as f64 / 1000.0, r.simulated_ms as f64 / 1000.0 / secs.max(1e-9));
        println!("  digest {:016x}", r.digest);
        if let Some(t) = trace {
            std::fs::write(t, r.trace.to_jsonl()).map_err(|e| format!("{}: {e}", t.display()))?;
            println!("  trace written to {}", t.display());
        }
        if !r.passed() {
            let plant = plant.map(|b| format!(" --plant {b}")).unwrap_or_default();
            let tv = transaction_version.map(|v| format!(" --transaction-version {v}")).unwrap_or_default();
            println!("  reproduce: cargo sim run {} --seed {seed}{plant}{tv} --trace {}-{seed}.jsonl", path.display(), s.name);
        }
        Ok(r.passed())
    }

    /// The scenario files at `target`: the file itself, or every `.toml` below the directory,
    /// subdirectories included (`cargo sim sweep scenarios` sweeps fast, regression and slow).
    fn scenarios_in(target: &Path) -> Result<Vec<PathBuf>, String> {
        if !target.is_dir() {
            return Ok(vec![target.to_path_buf()]);
        }
        let mut found = Vec::new();
        let mut dirs = vec![target.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
                let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|x| x == "toml") {
                    found.push(path);
                }
            }
        }
        found.sort();
        Ok(found)
    }

    fn sweep(targets: &[PathBuf], seeds: Range<u64>, opts: SweepArgs, bug: Option<PlantedBug>) -> Result<bool, String> {
        let mut paths = Vec::new();
        for t in targets {
            paths.extend(scenarios_in(t)?);
        }
        let target = targets.iter().map(|t| t.display().to_string()).collect::<Vec<_>>().join(" ");
        let scenarios = paths.iter().map(|p| Ok((p.clone(), load(p)?))).collect::<Result<Vec<_>, String>>()?;
        let shard = opts.shard;
        let work = sweep::jobs(&scenarios, seeds.clone().filter(|seed| shard.is_none_or(|(i, n)| seed % n == i)));
        let total = work.len();
        if total == 0 {
            // A sweep that runs nothing must not pass: a typo in a path would look green.
            return Err(format!("{target}: no runs (scenario files found: {}, seeds {seeds:?}, shard {shard:?})", paths.len()));
        }
        // The summary's folder is made now: a sweep of an hour must not end unable to write it.
        if let Some(dir) = opts.summary.as_ref().and_then(|f| f.parent()).filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let bar = indicatif::ProgressBar::new(total as u64);
        bar.set_style(indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} seeds {elapsed_precise} eta {eta}").expect("template"));
        let wall = std::time::Instant::now();
        let deadline = opts.budget_secs.map(|s| wall + std::time::Duration::from_secs(s));
        let keep_going = || deadline.is_none_or(|d| std::time::Instant::now() < d);
        // A failing run is reported as it ends, so a long or budgeted sweep shows its findings
        // while it goes (`suspend` prints with or without a terminal).
        let write_errors = std::sync::Mutex::new(Vec::new());
        let on_done = |o: Option<&sweep::Outcome>| {
            if let Some(o) = o.filter(|o| !o.passed) {
                match o.write_trace(&opts.traces) {
                    Ok(file) => bar.suspend(|| println!("{}", o.report(&file, bug))),
                    Err(e) => write_errors.lock().expect("errors").push(e),
                }
            }
            bar.inc(1);
        };
        let results = sweep::sweep(work, &sweep::Options { jobs: opts.jobs, bug, until_found: opts.until_found, transaction_version: opts.transaction_version, keep_going: &keep_going, on_done: &on_done });
        bar.finish_and_clear();
        if let Some(e) = write_errors.into_inner().expect("errors").into_iter().next() {
            return Err(e);
        }
        let secs = wall.elapsed().as_secs_f64();
        let sweep::Tally { by_scenario, failures, simulated_ms, anomalies } = sweep::tally(&results);
        println!("{:<32} {:>8} {:>8} {:>12} {:>14}", "scenario", "seeds", "failed", "first failed", "anomaly seeds");
        for (name, (n, f, first)) in &by_scenario {
            let shown = anomalies.get(name).map_or("-".to_string(), |(k, first)| format!("{k} (first {})", first.map_or("-".to_string(), |s| s.to_string())));
            println!("{name:<32} {n:>8} {f:>8} {:>12} {shown:>14}", first.map_or("-".to_string(), |s| s.to_string()));
        }
        let unshown: Vec<&String> = anomalies.iter().filter(|(_, (k, _))| *k == 0).map(|(name, _)| name).collect();
        for name in &unshown {
            println!("FAIL {name}: no seed of {}..{} showed its anomaly (expect.anomaly): the schedule no longer finds it", seeds.start, seeds.end);
        }
        let ran = results.len();
        let cut = if ran < total && deadline.is_some() { format!(" (time budget reached: {} of {total} runs not made)", total - ran) } else { String::new() };
        println!("{ran} runs in {secs:.1} s wall ({:.0} seeds/min, {:.0}x real time over all runs){cut}", ran as f64 / secs.max(1e-9) * 60.0, simulated_ms as f64 / 1000.0 / secs.max(1e-9));
        if let Some(file) = &opts.summary {
            let end = serde_json::json!({"summary": {"target": target, "seeds": format!("{}..{}", seeds.start, seeds.end), "shard": shard.map(|(i, n)| format!("{i}/{n}")), "planned": total, "runs": ran, "failed": failures, "wall_s": (secs * 10.0).round() / 10.0, "planted_bug": bug.map(|b| format!("{b:?}"))}});
            std::fs::write(file, sweep::summary_lines(&results, end)).map_err(|e| format!("{}: {e}", file.display()))?;
            println!("summary written to {}", file.display());
        }
        Ok(failures == 0 && unshown.is_empty())
    }

    fn shrink(input: &Path, seed: Option<u64>, plant: Option<&str>, checker: Option<String>, out: Option<PathBuf>, runs_max: usize) -> Result<bool, String> {
        let text = std::fs::read_to_string(input).map_err(|e| format!("{}: {e}", input.display()))?;
        // A trace is JSON Lines (its header opens with `{`); a TOML file cannot start so.
        let (scenario_path, seed, bug) = if text.starts_with('{') {
            if seed.is_some() || plant.is_some() {
                return Err(format!("{}: a trace names its seed and planted bug; --seed and --plant are for a scenario file", input.display()));
            }
            let (path, seed) = sim::trace::read_header(&text)?;
            (PathBuf::from(path), seed, sim::trace::read_planted_bug(&text)?)
        } else {
            (input.to_path_buf(), seed.ok_or("shrinking a scenario file needs --seed")?, plant.map(str::to_string))
        };
        let mut scenario = load(&scenario_path)?;
        if text.starts_with('{') {
            if let Some(v) = sim::trace::read_transaction_version(&text)? {
                scenario.broker.transaction_version = Some(v);
            }
        }
        let bug = planted(bug.as_deref())?;
        let out = out.unwrap_or_else(|| PathBuf::from("traces").join(format!("{}-{seed}-shrunk.toml", scenario.name.trim_end_matches("-shrunk"))));
        let req = sim::shrink::Request { scenario, scenario_path: scenario_path.display().to_string(), seed, bug, checker, runs_max, out_path: out.display().to_string() };
        let wall = std::time::Instant::now();
        let mut progress = |s: &sim::shrink::Step| println!("run {:>4}/{} {:<10} {:>3} faults  {:<6}  {}", s.run, s.runs_max, s.pass, s.faults, if s.fails { "fails" } else { "passes" }, s.what);
        let shrunk = sim::shrink::shrink(&req, &mut sim::shrink::runner(seed, bug), &mut progress)?;
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&out, &shrunk.text).map_err(|e| format!("{}: {e}", out.display()))?;
        print!("{}", shrunk.text.lines().take_while(|l| l.starts_with('#')).map(|l| format!("{l}\n")).collect::<String>());
        let limit = if shrunk.limited { " (stopped by the run limit)" } else { "" };
        println!("shrunk {} seed {seed}: faults {} → {}, {} still fails; {} runs{limit} in {:.1} s wall; written to {}", req.scenario_path, shrunk.faults_before, shrunk.scenario.faults.len(), shrunk.checker, shrunk.runs, wall.elapsed().as_secs_f64(), out.display());
        Ok(true)
    }

    fn replay(trace_path: &Path) -> Result<bool, String> {
        let text = std::fs::read_to_string(trace_path).map_err(|e| format!("{}: {e}", trace_path.display()))?;
        let (scenario_path, seed) = sim::trace::read_header(&text)?;
        let mut s = load(Path::new(&scenario_path))?;
        let bug = planted(sim::trace::read_planted_bug(&text)?.as_deref())?;
        if let Some(v) = sim::trace::read_transaction_version(&text)? {
            s.broker.transaction_version = Some(v);
        }
        let again = cluster::run(&s, &scenario_path, seed, bug)?.trace.to_jsonl();
        match sim::trace::first_divergence(&text, &again) {
            None => {
                println!("identical: {} lines, scenario {scenario_path} seed {seed}", text.lines().count());
                Ok(true)
            }
            Some((line, was, now)) => {
                println!("diverges at line {line}:\n  trace:  {was}\n  replay: {now}");
                Ok(false)
            }
        }
    }

    fn view(trace: &Path, out: Option<&Path>) -> Result<bool, String> {
        let text = sim::view::read_trace(trace).map_err(|e| format!("{}: {e}", trace.display()))?;
        let title = format!("sim view: {}", trace.display());
        let page = sim::view::render(&text, &title).map_err(|e| format!("{}: {e}", trace.display()))?;
        let out = out.map(Path::to_path_buf).unwrap_or_else(|| trace.with_extension("html"));
        std::fs::write(&out, page).map_err(|e| format!("{}: {e}", out.display()))?;
        println!("wrote {}", out.display());
        Ok(true)
    }

    fn write_scenario(dir: &Path, s: &Scenario) -> Result<PathBuf, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let file = dir.join(format!("{}.toml", s.name));
        let text = toml::to_string(s).map_err(|e| format!("{}: {e}", s.name))?;
        std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
        Ok(file)
    }

    fn matrix(seeds: Range<u64>, jobs: usize, only: Option<&str>, dump: Option<&Path>, traces: &Path, bug: Option<PlantedBug>) -> Result<bool, String> {
        use sim::matrix::{measure, Measured, Verdict};
        let rows: Vec<_> = sim::matrix::rows().into_iter().filter(|r| only.is_none_or(|o| r.scenario.name.contains(o))).collect();
        if rows.is_empty() {
            return Err(format!("no matrix row matches `{}`", only.unwrap_or_default()));
        }
        if let Some(dir) = dump {
            for row in &rows {
                println!("wrote {}", write_scenario(dir, &row.scenario)?.display());
            }
        }
        // Every (row, seed) pair is one job, so both cores stay busy across rows.
        let work: Vec<(usize, u64)> = (0..rows.len()).flat_map(|i| seeds.clone().map(move |seed| (i, seed))).collect();
        let queue = std::sync::Mutex::new(work.into_iter());
        let results: std::sync::Mutex<Vec<(usize, Measured)>> = std::sync::Mutex::new(Vec::new());
        let wall = std::time::Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..jobs.max(1) {
                scope.spawn(|| loop {
                    let Some((i, seed)) = queue.lock().expect("queue").next() else { break };
                    let m = measure(&rows[i], seed, bug);
                    results.lock().expect("results").push((i, m));
                });
            }
        });
        let mut results = results.into_inner().expect("results");
        results.sort_by_key(|(i, m)| (*i, m.seed));
        println!("durability matrix: {} rows x seeds {}..{} ({:.1} s wall)", rows.len(), seeds.start, seeds.end, wall.elapsed().as_secs_f64());
        println!("| # | setup | acks | flush | fault | promise | seeds | acknowledged | lost | seeds with loss | verdict |");
        println!("|---:|---|---|---|---|---|---:|---:|---:|---:|---|");
        let mut failed = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let measured: Vec<Measured> = results.iter().filter(|(r, _)| *r == i).map(|(_, m)| m.clone()).collect();
            let acknowledged: usize = measured.iter().map(|m| m.acknowledged).sum();
            let sent: usize = measured.iter().map(|m| m.sent_acks0).sum();
            let lost: usize = measured.iter().map(|m| m.lost).sum();
            let with_loss = measured.iter().filter(|m| m.lost > 0).count();
            // acks=0 acknowledges nothing: its loss is of records sent.
            let (acknowledged, lost) = if row.acks == "0" { (format!("0 ({sent} sent)"), format!("{lost} sent")) } else { (acknowledged.to_string(), lost.to_string()) };
            let verdict = Verdict::of(row, &measured);
            let promise = if row.loss_allowed { "loss allowed" } else { "no acknowledged loss" };
            println!("| {} | {} | {} | {} | {} | {promise} | {} | {acknowledged} | {lost} | {with_loss} | {} |", i + 1, row.setup, row.acks, row.flush, row.fault, measured.len(), verdict.text());
            if !verdict.ok() {
                failed.push((row, verdict, measured));
            }
        }
        println!();
        for (i, row) in rows.iter().enumerate() {
            println!("{:>2}. {}: {}", i + 1, row.scenario.name, row.note);
        }
        match failed.len() {
            0 => println!("\nevery row keeps its promise"),
            n => println!("\n{n} of {} rows FAILED", rows.len()),
        }
        for (row, verdict, measured) in &failed {
            let file = write_scenario(traces, &row.scenario)?;
            println!("\n{} — {}", row.scenario.name, verdict.text());
            let bad: Vec<&Measured> = match verdict {
                Verdict::NoLossSeen => Vec::new(),
                Verdict::AcknowledgedLoss => measured.iter().filter(|m| m.lost > 0).collect(),
                _ => measured.iter().filter(|m| !m.other.is_empty()).collect(),
            };
            if bad.is_empty() {
                println!("  no seed lost anything; the fault as staged does not reach what the row is about");
            }
            for m in bad.iter().take(5) {
                println!("  seed {}: {} lost, {} other violations", m.seed, m.lost, m.other.len());
                for v in m.other.iter().take(2).chain(m.losses.iter().take(2)) {
                    println!("    {v}");
                }
                println!("    reproduce: cargo sim run {} --seed {}", file.display(), m.seed);
            }
        }
        Ok(failed.is_empty())
    }

    fn crash_clean(seeds: Range<u64>, rounds: usize, deferred: bool, verbose: bool) -> Result<bool, String> {
        use broker_core::log::clean::Keep;
        let (flag, mode, rounds_of) = match deferred {
            false => ("", "", sim::crash_clean::clean_rounds as fn(u64, usize, Keep, bool) -> Result<sim::crash_clean::CleanRounds, String>),
            true => (" --deferred", ", the broker's jobs", sim::crash_clean::deferred_clean_rounds as _),
        };
        println!("crash-log --clean{flag}: seeds {}..{}, {rounds} rounds each (dying inside cleaning{mode}, then power loss or clean)", seeds.start, seeds.end);
        let (mut failed, mut total) = (0u64, sim::crash_clean::CleanRounds::default());
        for seed in seeds.clone() {
            match rounds_of(seed, rounds, Keep::Latest, verbose) {
                Ok(s) => total.add(&s),
                Err(e) => {
                    failed += 1;
                    println!("FAIL {e}");
                    println!("  reproduce: cargo sim crash-log --clean{flag} --seeds {seed} --rounds {rounds} --verbose");
                }
            }
        }
        let seeds_run = seeds.end - seeds.start;
        println!(
            "{} of {seeds_run} seeds passed: {} rounds, {} passes completed, {} died mid-pass, {} recoveries died, {} swaps completed at open, {} tombstones gone, {} aborted records gone, {} markers removed",
            seeds_run - failed, total.rounds, total.passes, total.died_mid_pass, total.died_in_recovery, total.swaps_completed, total.tombstones_gone, total.aborted_gone, total.markers_removed
        );
        if let Some(t) = deferred.then_some(&total) {
            println!("  {} jobs run; deaths inside a job: {} sync, {} cleaning step or discard, {} swap ({} in its marker part)", t.jobs_run, t.died_in_sync_job, t.died_in_clean_job, t.died_in_swap_job, t.died_in_markers);
        }
        Ok(failed == 0)
    }

    fn crash_log(seeds: Range<u64>, rounds: usize, nodes: bool, deferred: bool, verbose: bool) -> Result<bool, String> {
        let mode = match (nodes, deferred) {
            (true, _) => "madsim nodes, kill + power loss",
            (false, true) => "between calls, power loss or clean, writes and syncs as jobs",
            (false, false) => "between calls, power loss or clean",
        };
        println!("crash-log: seeds {}..{}, {rounds} rounds each ({mode})", seeds.start, seeds.end);
        let mut failed = 0;
        let mut combined = Vec::new();
        for seed in seeds.clone() {
            let result = match (nodes, deferred) {
                (true, _) => node_rounds(seed, rounds),
                (false, true) => deferred_crash_rounds(seed, rounds, verbose),
                (false, false) => crash_rounds(seed, rounds, verbose),
            };
            match result {
                Ok(log) => combined.push((seed as i64, digest(&log).to_be_bytes().to_vec())),
                Err(e) => {
                    failed += 1;
                    println!("FAIL {e}");
                    let flag = if nodes { " --nodes" } else if deferred { " --deferred" } else { "" };
                    println!("  reproduce: cargo sim crash-log --seeds {seed} --rounds {rounds}{flag} --verbose");
                }
            }
        }
        let total = seeds.end - seeds.start;
        println!("{} of {total} seeds passed; digest {:016x}", total - failed, digest(&combined));
        Ok(failed == 0)
    }
}
