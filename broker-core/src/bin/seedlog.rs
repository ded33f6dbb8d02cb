//! `seedlog`: tools over the partition log on real files — a demo of the log on embedded
//! defaults, the storage benchmark, and a dump of segment files — and the operator's view of a
//! running cluster's consumer groups (`seedlog groups`, in `seedlog/groups.rs`), and a load of
//! many connections against a running broker (`seedlog bench-connections`, in
//! `seedlog/bench_connections.rs`), and moving replicas between brokers (`seedlog reassign`,
//! `seedlog brokers`, in `seedlog/reassign.rs`) and client quotas (`seedlog configs`, in
//! `seedlog/configs.rs`). This is the IO
//! edge: it may read clocks, touch the file system and start a runtime; the log and the client
//! library never do.

// A crate root looks for modules beside itself, where cargo would take any `.rs` for another
// binary; the directory named after the binary keeps its modules out of that namespace.
#[path = "seedlog/groups.rs"]
mod groups;
#[path = "seedlog/security.rs"]
mod security;
#[path = "seedlog/bench_connections.rs"]
mod bench_connections;
#[path = "seedlog/reassign.rs"]
mod reassign;
#[path = "seedlog/configs.rs"]
mod configs;

use broker_core::constants::admin_request_ms_default;
use broker_core::log::batch::{self, build};
use broker_core::log::{FlushPolicy, Log, LogConfig, LogError, RecoveryReport};
use broker_core::storage::{Disk, FileDisk};
use clap::{Parser, Subcommand};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Parser)]
#[command(name = "seedlog", about = "Seedlog partition-log tools (real files) and consumer-group queries")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Append, roll, tear the tail as a crash would, recover, read back and look up by time.
    Demo {
        /// Directory for the demo partition (default: a fresh temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Log append and read-back MB/s against raw sequential writes to one file.
    Bench {
        /// Directory to write in (default: a temporary directory on the current file system).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// MiB appended in the no-fsync runs.
        #[arg(long, default_value_t = 512)]
        mib: u64,
        /// Batches written in the fdatasync-per-write runs.
        #[arg(long, default_value_t = 4000)]
        synced_batches: u64,
        /// Runs of each measurement; the median is reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Log cleaner throughput: compact a log of keyed records (a share of them live), next to a
    /// raw sequential read + write of the same bytes (docs/benchmarks.md).
    BenchCleaner {
        /// Directory to work in (default: a temporary directory on the current file system).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// MiB of log to compact.
        #[arg(long, default_value_t = 1024)]
        mib: u64,
        /// Percent of the records whose key is written once (the live share after cleaning).
        #[arg(long, default_value_t = 10)]
        live_percent: u64,
        /// Key map budget, MiB (Kafka's log.cleaner.dedupe.buffer.size is 128).
        #[arg(long, default_value_t = 128)]
        map_mib: usize,
        /// Bytes of each record's value (80: records of about 100 bytes on disk).
        #[arg(long, default_value_t = 80)]
        value_bytes: usize,
    },
    /// Many producer connections and many idle ones against a running broker: records/s,
    /// latency, and the broker's memory and CPU per connection (docs/benchmarks.md).
    BenchConnections(bench_connections::Args),
    /// Print every batch header of a `.log` segment file, like kafka-dump-log.
    Dump { file: PathBuf },
    /// Consumer groups of a running cluster, like kafka-consumer-groups.sh (read-only).
    Groups {
        /// Any broker of the cluster, host:port.
        #[arg(long, global = true, default_value = "127.0.0.1:9092")]
        bootstrap: String,
        /// How long to wait for each broker's answer.
        #[arg(long, global = true, default_value_t = admin_request_ms_default)]
        timeout_ms: u64,
        #[command(subcommand)]
        cmd: groups::GroupsCmd,
    },
    /// The cost of one authorization with many ACLs: the broker's lookup against a scan.
    BenchAuthorizer {
        #[arg(long, default_value_t = 100_000)]
        acls: usize,
        #[arg(long, default_value_t = 20_000)]
        checks: usize,
    },
    /// ACLs of a running cluster, like kafka-acls.sh: list, add, remove.
    Acls {
        #[command(flatten)]
        login: security::Login,
        #[command(subcommand)]
        cmd: security::AclsCmd,
    },
    /// SCRAM users of a running cluster, like kafka-configs.sh --entity-type users.
    Users {
        #[command(flatten)]
        login: security::Login,
        #[command(subcommand)]
        cmd: security::UsersCmd,
    },
    /// Move partitions' replicas between brokers, like kafka-reassign-partitions.sh:
    /// generate a plan, execute it, verify it, or cancel it.
    Reassign {
        /// Any broker of the cluster, host:port.
        #[arg(long, global = true, default_value = "127.0.0.1:9092")]
        bootstrap: String,
        /// How long to wait for each answer.
        #[arg(long, global = true, default_value_t = admin_request_ms_default)]
        timeout_ms: u64,
        #[command(subcommand)]
        cmd: reassign::ReassignCmd,
    },
    /// Client quotas of a running cluster, like kafka-configs.sh --entity-type clients|users.
    Configs {
        /// Any broker of the cluster, host:port.
        #[arg(long, default_value = "127.0.0.1:9092")]
        bootstrap: String,
        /// How long to wait for the answer.
        #[arg(long, default_value_t = admin_request_ms_default)]
        timeout_ms: u64,
        #[command(flatten)]
        args: configs::ConfigsArgs,
    },
    /// The cluster's brokers, like kafka-cluster.sh: unregister a decommissioned one.
    Brokers {
        /// Any broker of the cluster, host:port.
        #[arg(long, global = true, default_value = "127.0.0.1:9092")]
        bootstrap: String,
        /// How long to wait for the answer.
        #[arg(long, global = true, default_value_t = admin_request_ms_default)]
        timeout_ms: u64,
        #[command(subcommand)]
        cmd: reassign::BrokersCmd,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Demo { dir } => demo(dir),
        Cmd::Bench { dir, mib, synced_batches, runs } => bench(dir, mib, synced_batches, runs),
        Cmd::BenchCleaner { dir, mib, live_percent, map_mib, value_bytes } => bench_cleaner(dir, mib, live_percent, map_mib, value_bytes),
        Cmd::BenchConnections(args) => bench_connections::run(args),
        Cmd::Dump { file } => dump(&file),
        Cmd::Groups { bootstrap, timeout_ms, cmd } => groups::run(&bootstrap, Duration::from_millis(timeout_ms), cmd),
        Cmd::Acls { login, cmd } => security::acls(login, cmd),
        Cmd::BenchAuthorizer { acls, checks } => security::bench_authorizer(acls, checks),
        Cmd::Users { login, cmd } => security::users(login, cmd),
        Cmd::Reassign { bootstrap, timeout_ms, cmd } => reassign::reassign(&bootstrap, Duration::from_millis(timeout_ms), cmd),
        Cmd::Configs { bootstrap, timeout_ms, args } => configs::run(&bootstrap, Duration::from_millis(timeout_ms), args),
        Cmd::Brokers { bootstrap, timeout_ms, cmd } => reassign::brokers(&bootstrap, Duration::from_millis(timeout_ms), cmd),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

type Res = Result<(), Box<dyn std::error::Error>>;

/// A client error for the operator: a Kafka code by its name as well as its number.
fn error_text(e: broker_core::client::ClientError) -> String {
    match e {
        broker_core::client::ClientError::Kafka { code, message } => format!("{code:?} (error code {}): {message}", code.code()),
        e => e.to_string(),
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// `dir`, or a fresh temporary directory under `base` that is removed on exit.
fn work_dir(dir: Option<PathBuf>, label: &str, base: &Path) -> Result<(PathBuf, Option<tempfile::TempDir>), std::io::Error> {
    match dir {
        Some(d) => Ok((d, None)),
        None => {
            let t = tempfile::Builder::new().prefix(label).tempdir_in(base)?;
            Ok((t.path().canonicalize()?, Some(t)))
        }
    }
}

fn print_report(r: &RecoveryReport) {
    println!("  recovery point {}, {} segment(s) trusted, {} scanned", r.recovery_point, r.segments_trusted, r.segments_scanned);
    if let Some(cut) = &r.cut {
        println!("  cut {} at byte {} ({} bytes removed): {}", cut.file.display(), cut.position, cut.bytes_removed, cut.reason);
    }
    for p in &r.segments_removed {
        println!("  removed segment after the cut: {}", p.display());
    }
    for p in &r.indexes_rebuilt {
        println!("  rebuilt index {}", p.display());
    }
}

fn demo(dir: Option<PathBuf>) -> Res {
    let (dir, _tmp) = work_dir(dir, "seedlog-demo-", &std::env::temp_dir())?;
    let disk: Arc<dyn Disk> = Arc::new(FileDisk::new());
    let config = LogConfig { segment_bytes: 64 * 1024, ..LogConfig::default() };
    println!("partition log in {} (segment.bytes={}, index.interval.bytes={}, flush=never)", dir.display(), config.segment_bytes, config.index_interval_bytes);
    let start = now_ms();
    let (mut log, report) = Log::open(disk.clone(), &dir, config.clone(), start)?;
    print_report(&report);
    let first = log.log_end_offset();
    for i in 0..1000i64 {
        let values: Vec<Vec<u8>> = (0..10).map(|r| format!("demo record {} of batch {i}", i * 10 + r).into_bytes()).collect();
        let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        let mut b = build(&refs, start as i64 + i);
        log.append(&mut b, 0, now_ms())?;
    }
    log.flush(now_ms())?;
    log.checkpoint()?;
    println!("appended 1000 batches (10,000 records): offsets {first}..{}, {} segments, {} bytes", log.log_end_offset(), log.segment_bases().len(), log.size_bytes());
    let mut extra = build(&[b"written but never synced"], start as i64 + 2000);
    log.append(&mut extra, 0, now_ms())?;
    let bases = log.segment_bases();
    drop(log);

    // A crash that tore the last, unsynced batch: cut 7 bytes from the end of the active segment.
    let active = dir.join(format!("{:020}.log", bases[bases.len() - 1]));
    let len = std::fs::metadata(&active)?.len();
    std::fs::OpenOptions::new().write(true).open(&active)?.set_len(len - 7)?;
    println!("simulated a torn write: cut 7 bytes off {}", active.display());

    let (log, report) = Log::open(disk, &dir, config, now_ms())?;
    println!("reopened:");
    print_report(&report);
    let mut records = 0i64;
    log.for_each_batch(log.log_start_offset(), 64 * 1024, |h, _| {
        records += h.records_count as i64;
        Ok::<_, LogError>(())
    })?;
    println!("read back {records} records, every batch CRC-checked; log end offset {}", log.log_end_offset());
    let probe = start as i64 + 500;
    if let Some((offset, ts)) = log.offset_for_timestamp(probe)? {
        println!("first record with timestamp >= {probe}: offset {offset} (timestamp {ts})");
    }
    log.close(now_ms())?;
    Ok(())
}

fn dump(file: &Path) -> Res {
    let f = std::fs::File::open(file)?;
    let len = f.metadata()?.len();
    let mut pos = 0u64;
    let mut head = [0u8; 61];
    while pos < len {
        if len - pos < 61 {
            println!("position {pos}: {} trailing bytes", len - pos);
            break;
        }
        f.read_exact_at(&mut head, pos)?;
        let Some(size) = batch::declared_size(&head).filter(|&s| pos + s as u64 <= len) else {
            println!("position {pos}: implausible batch length; stopping");
            break;
        };
        let mut b = vec![0u8; size];
        f.read_exact_at(&mut b, pos)?;
        match batch::validate(&b, usize::MAX) {
            Ok(h) => println!(
                "baseOffset: {} lastOffset: {} count: {} position: {pos} size: {size} epoch: {} maxTimestamp: {} compression: {} producerId: {} baseSequence: {} crc: valid",
                h.base_offset, h.last_offset(), h.records_count, h.leader_epoch, h.max_timestamp, h.compression(), h.producer_id, h.base_sequence
            ),
            Err(e) => println!("position {pos}: invalid batch: {e}"),
        }
        pos += size as u64;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Benchmark

/// A 1 KiB batch (one record) as producers send it.
fn kib_batch() -> Vec<u8> {
    let mut n = 900;
    loop {
        let b = build(&[&vec![b'x'; n]], 1);
        match b.len().cmp(&1024) {
            std::cmp::Ordering::Equal => return b,
            std::cmp::Ordering::Less => n += 1,
            std::cmp::Ordering::Greater => n -= 1,
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The process's CPU time so far (user + system): on a shared machine, bytes per CPU-second is
/// what a run would reach on a core of its own.
fn cpu_time() -> Duration {
    // Rusage is a plain C struct of integers and timevals: all zero bytes is a valid
    // value of it (and what getrusage's failure would leave).
    // SAFETY: as the lines above say.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // `&mut u` points to a live rusage of ours, the struct getrusage(RUSAGE_SELF)
    // fills; nothing else is written.
    // SAFETY: as the lines above say.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn mbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / d.as_secs_f64()
}

fn raw_write(dir: &Path, batch: &[u8], count: u64, sync: bool) -> Result<Duration, std::io::Error> {
    let path = dir.join("raw.bin");
    let mut f = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(&path)?;
    let t = Instant::now();
    for _ in 0..count {
        f.write_all(batch)?;
        if sync {
            f.sync_data()?;
        }
    }
    let d = t.elapsed();
    drop(f);
    std::fs::remove_file(&path)?;
    Ok(d)
}

fn log_append(dir: &Path, batch: &[u8], count: u64, flush: FlushPolicy) -> Result<(Duration, Duration, u64), Box<dyn std::error::Error>> {
    let part = dir.join("bench-0");
    let disk: Arc<dyn Disk> = Arc::new(FileDisk::new());
    let config = LogConfig { flush, ..LogConfig::default() };
    let (mut log, _) = Log::open(disk, &part, config, 0)?;
    let mut buf = batch.to_vec();
    let t = Instant::now();
    for _ in 0..count {
        buf.copy_from_slice(batch); // every produce request arrives in a fresh buffer
        log.append(&mut buf, 0, 0)?;
    }
    let append = t.elapsed();
    let t = Instant::now();
    let mut read = 0u64;
    log.for_each_batch(0, 1 << 20, |_, bytes| {
        read += bytes.len() as u64;
        Ok::<_, LogError>(())
    })?;
    let read_time = t.elapsed();
    drop(log);
    std::fs::remove_dir_all(&part)?;
    Ok((append, read_time, read))
}

/// Records of `value_bytes` plus about 20 bytes in batches of 16; keys cycle so that
/// `live_percent` of the records hold the last value of their key.
fn bench_cleaner(dir: Option<PathBuf>, mib: u64, live_percent: u64, map_mib: usize, value_bytes: usize) -> Res {
    use broker_core::log::batch::build_keyed;
    use broker_core::log::CleanupPolicy;
    let (dir, _tmp) = work_dir(dir, "seedlog-bench-cleaner-", Path::new("."))?;
    let part = dir.join("compacted-0");
    let disk: Arc<dyn Disk> = Arc::new(FileDisk::new());
    let config = LogConfig { segment_bytes: 128 << 20, cleanup: CleanupPolicy::COMPACT, min_cleanable_dirty_ratio_ppm: 0, ..LogConfig::default() };
    let (mut log, _) = Log::open(disk, &part, config, 0)?;
    let value = vec![b'v'; value_bytes];
    let records_per_batch = 16u64;
    let record_bytes = (build_keyed(&[(Some(b"key-00000000"), Some(&value))], 1).len() - broker_core::constants::batch_header_bytes) as u64;
    let batch_bytes = broker_core::constants::batch_header_bytes as u64 + record_bytes * records_per_batch;
    let batches = (mib << 20) / batch_bytes.max(1);
    let keys = (batches * records_per_batch * live_percent.clamp(1, 100) / 100).max(1);
    println!("seedlog bench-cleaner: {mib} MiB, {batches} batches of {records_per_batch} records of {} bytes, {keys} keys ({live_percent}% live), map {map_mib} MiB, in {}", record_bytes, dir.display());
    let mut n = 0u64;
    for _ in 0..batches {
        let names: Vec<String> = (0..records_per_batch).map(|i| format!("key-{:08}", (n + i) % keys)).collect();
        let kv: Vec<_> = names.iter().map(|k| (Some(k.as_bytes()), Some(value.as_slice()))).collect();
        log.append(&mut build_keyed(&kv, 1), 0, 0)?;
        n += records_per_batch;
    }
    log.roll(0)?;
    log.flush(0)?;
    let before = log.size_bytes();
    // The passes as the broker runs them: a step at a time, each timed (the longest step is
    // the longest the cleaner holds the broker).
    use broker_core::log::{clean::Keep, CleanStep};
    let (t, cpu) = (Instant::now(), cpu_time());
    let (mut passes, mut steps) = (0, Vec::new());
    // The map phase's share, by the phase each step began in (a step that starts a pass maps):
    // every dirty byte read once and CRC-checked, every record walked and its key put in the
    // map, nothing written — the part of a pass no key-map cleaner avoids (Kafka's has it).
    let mut mapping = (Duration::ZERO, Duration::ZERO);
    loop {
        let maps = log.cleaning_phase().is_none_or(|p| p == "map");
        let (s, c) = (Instant::now(), cpu_time());
        let step = log.clean_step(1, log.log_end_offset(), map_mib << 20, broker_core::constants::cleaner_step_bytes, Keep::Latest)?;
        steps.push(s.elapsed());
        if maps {
            mapping = (mapping.0 + s.elapsed(), mapping.1 + (cpu_time() - c));
        }
        match step {
            CleanStep::Idle => break,
            CleanStep::Working { .. } => {}
            CleanStep::Done { .. } => passes += 1,
        }
    }
    let clean = (t.elapsed(), cpu_time() - cpu);
    steps.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let after = log.size_bytes();
    // The same number of bytes read and written once, sequentially: the cleaner's IO at best.
    // The best of three: a write that must first reclaim page cache (the usual state of a
    // machine whose memory is full of it) costs up to 3× one that finds free pages.
    let best = |in_kernel: bool| -> Result<(Duration, Duration), std::io::Error> {
        let runs = [raw_read_write(&part, before, in_kernel)?, raw_read_write(&part, before, in_kernel)?, raw_read_write(&part, before, in_kernel)?];
        Ok((runs.iter().map(|r| r.0).min().expect("three"), runs.iter().map(|r| r.1).min().expect("three")))
    };
    let (raw_estimate, in_kernel) = (best(false)?, best(true)?);
    // MB/s of wall time, and MB per CPU-second (the same on a quiet machine; on a busy one the
    // CPU figure is what the run would reach with a core of its own).
    println!("{:<56} {:>10} {:>12}", "measurement", "MB/s", "MB/CPU-s");
    let line = |what: &str, (wall, cpu): (Duration, Duration)| println!("{what:<56} {:>10.1} {:>12.1}", mbps(before, wall), mbps(before, cpu));
    line(&format!("cleaner ({passes} passes, {before} -> {after} bytes)"), clean);
    line("  of which its map phase (read, CRC, walk, key map)", mapping);
    line("raw sequential read + write of the same bytes, best of 3", raw_estimate);
    line("(for reference: an in-kernel copy, copy_file_range)", in_kernel);
    let ratio = |m: (Duration, Duration), f: fn(&(Duration, Duration)) -> Duration| mbps(before, f(&m)) / mbps(before, f(&raw_estimate));
    println!("ratio cleaner/raw           {:.2} wall, {:.2} CPU (target >= 0.50)", ratio(clean, |d| d.0), ratio(clean, |d| d.1));
    println!("ratio map phase alone/raw   {:.2} wall, {:.2} CPU (the whole pass's ratio is below this)", ratio(mapping, |d| d.0), ratio(mapping, |d| d.1));
    println!("steps: {}, median {:.2} ms, p99 {:.2} ms, longest {:.2} ms", steps.len(), ms(steps[steps.len() / 2]), ms(steps[steps.len() * 99 / 100]), ms(steps[steps.len() - 1]));
    Ok(())
}

/// Reads `bytes` of a fresh file written to `dir` and writes them again: a raw read + write,
/// 1 MiB at a time through memory as any program that looks at the bytes must; or, `in_kernel`,
/// with `std::io::copy`, which Linux turns into `copy_file_range` (the bytes never reach user
/// space: no cleaner can do that, so it is only a reference).
fn raw_read_write(dir: &Path, bytes: u64, in_kernel: bool) -> Result<(Duration, Duration), std::io::Error> {
    let path = dir.join("raw-source.bin");
    let chunk = vec![b'r'; 1 << 20];
    {
        let mut f = std::fs::File::create(&path)?;
        for _ in 0..bytes.div_ceil(1 << 20) {
            f.write_all(&chunk)?;
        }
    }
    let (t, cpu) = (Instant::now(), cpu_time());
    let mut src = std::fs::File::open(&path)?;
    let mut dst = std::fs::File::create(dir.join("raw-target.bin"))?;
    if in_kernel {
        std::io::copy(&mut src, &mut dst)?;
    } else {
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = std::io::Read::read(&mut src, &mut buf)?;
            if n == 0 {
                break;
            }
            dst.write_all(&buf[..n])?;
        }
    }
    let d = (t.elapsed(), cpu_time() - cpu);
    std::fs::remove_file(&path)?;
    std::fs::remove_file(dir.join("raw-target.bin"))?;
    Ok(d)
}

fn bench(dir: Option<PathBuf>, mib: u64, synced: u64, runs: usize) -> Res {
    // The current directory, not /tmp: /tmp may be a tmpfs, where fdatasync measures nothing.
    let (dir, _tmp) = work_dir(dir, "seedlog-bench-", Path::new("."))?;
    std::fs::create_dir_all(&dir)?;
    let batch = kib_batch();
    let count = mib * 1024;
    println!("seedlog bench: 1 KiB batches, {mib} MiB unsynced / {synced} batches synced, median of {runs} runs, in {}", dir.display());
    let (mut raw, mut app, mut rd, mut raw_s, mut app_s) = (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        raw.push(mbps(count * 1024, raw_write(&dir, &batch, count, false)?));
        let (a, r, bytes) = log_append(&dir, &batch, count, FlushPolicy::Never)?;
        if bytes != count * 1024 {
            return Err(format!("read back {bytes} bytes, appended {}", count * 1024).into());
        }
        app.push(mbps(count * 1024, a));
        rd.push(mbps(bytes, r));
        raw_s.push(mbps(synced * 1024, raw_write(&dir, &batch, synced, true)?));
        app_s.push(mbps(synced * 1024, log_append(&dir, &batch, synced, FlushPolicy::EveryBatch)?.0));
    }
    let (raw, app, rd, raw_s, app_s) = (median(raw), median(app), median(rd), median(raw_s), median(app_s));
    println!("{:<44} {:>10}", "measurement", "MB/s");
    println!("{:<44} {:>10.1}", "raw sequential write (no fsync)", raw);
    println!("{:<44} {:>10.1}", "log append, flush=never", app);
    println!("{:<44} {:>10.1}", "log read-back (CRC-checked, 1 MiB reads)", rd);
    println!("{:<44} {:>10.2}", "raw write + fdatasync per write", raw_s);
    println!("{:<44} {:>10.2}", "log append, flush every batch", app_s);
    println!("ratio append/raw            {:.2} (target >= 0.80)", app / raw);
    println!("ratio synced append/raw     {:.2} (target >= 0.90)", app_s / raw_s);
    println!("synced appends per second   {:.0}", app_s * 1024.0);
    Ok(())
}
