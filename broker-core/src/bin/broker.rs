//! The real broker: `cargo run --release -p broker-core --bin broker` serves the Kafka protocol
//! on 127.0.0.1:9092 with data in ./data, on embedded defaults. The IO edge only: parse
//! settings, open the data directory on real files, run the shell until SIGINT or SIGTERM.

use broker_core::broker::Broker;
use broker_core::server::{self, config};
use broker_core::storage::{Disk, FileDisk};
use clap::Parser;
use std::sync::Arc;

/// Huge allocations get address space only: see broker_core::alloc (kafka-protocol sizes
/// arrays from a request's claimed count before decoding them).
#[global_allocator]
static allocator: broker_core::alloc::LazyHuge = broker_core::alloc::LazyHuge;

/// With one runtime thread, how many tasks it runs between looks at the runtime's shared queue
/// (tokio tunes this itself by default). A busy thread's own queue holds 256 tasks and the
/// woken ones beyond spill into the shared queue, which nothing else drains when the thread is
/// alone: with 1,000 connections those waited rounds, p99 165 ms against p50 5 ms (650 ms with
/// a fixed 31). Looking at every task serves connections in the order they woke: p99 30-36 ms.
/// With two threads the idle one drains it; that path is left as measured (docs/benchmarks.md,
/// "Many connections").
const lone_thread_global_queue_interval: u32 = 1;

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if let Err(e) = run() {
        tracing::error!("{e}");
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let flags = config::Flags::parse();
    let flags = match &flags.config {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("config file {}: {e}", path.display()))?;
            config::merge_file(&text, flags.clone())?
        }
        None => flags,
    };
    let (_, config) = config::resolve(&flags)?;
    let tls = match (&config.security.tls.keystore, &config.security.tls.truststore) {
        (None, None) => None,
        _ => Some(server::tls::Tls::load(&config.security.tls)?),
    };
    raise_open_files_limit();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = flags.worker_threads {
        runtime.worker_threads(n.into());
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if flags.worker_threads.map_or(cores, usize::from) == 1 {
        runtime.global_queue_interval(lone_thread_global_queue_interval);
    }
    let runtime = runtime.enable_all().build().map_err(|e| format!("runtime: {e}"))?;
    runtime.block_on(async move {
        let disk: Arc<dyn Disk> = Arc::new(FileDisk::new());
        let data = config.data_dir.clone();
        let _lock = lock_data_dir(&data)?;
        let now = server::now_ms();
        let quorum = match config::open_quorum(disk.clone(), &config, now).map_err(|e| format!("controller: {e}"))? {
            Some((q, notes)) => {
                for note in notes {
                    tracing::info!("{note}");
                }
                Some(q)
            }
            None => None,
        };
        let node_id = config.node_id;
        let controller = config.voters.iter().map(|(id, a)| format!("{id}@{a}")).collect::<Vec<_>>().join(",");
        let broker = Broker::open(disk.clone(), config, now).map_err(|e| format!("opening {}: {e}", data.display()))?;
        let mut clients = Vec::new();
        for spec in &broker.config().security.listeners {
            let l = tokio::net::TcpListener::bind(spec.addr).await.map_err(|e| format!("listen on {} ({}): {e}", spec.addr, spec.name))?;
            clients.push((l, spec.clone()));
        }
        let controller_listen = broker.config().security.controller_listener;
        let controller_listener = match controller_listen {
            Some(addr) => Some(tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("listen on {addr} (CONTROLLER): {e}"))?),
            None => None,
        };
        let security = &broker.config().security;
        let listening: Vec<String> = security
            .listeners
            .iter()
            .map(|l| match (l.protocol.name(), l.name.as_str()) {
                ("PLAINTEXT", "PLAINTEXT") => l.addr.to_string(),
                (protocol, name) if protocol == name => format!("{} ({protocol})", l.addr),
                (protocol, name) => format!("{} ({name}, {protocol})", l.addr),
            })
            .collect();
        let controller_at = controller_listen.map_or(String::new(), |a| format!(", controllers on {a}"));
        tracing::info!("node {node_id} listening on {}{controller_at}; controller quorum {controller}{}", listening.join(", "), if quorum.is_some() { " (this node votes)" } else { "" });
        let metrics = match flags.metrics_listen {
            Some(addr) => Some(tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("listen on {addr} (metrics): {e}"))?),
            None => None,
        };
        let shared = server::Shared::secured(broker, quorum, disk, tls);
        if let Some(listener) = metrics {
            tracing::info!("metrics on http://{}/metrics", listener.local_addr().map_or_else(|_| "?".into(), |a| a.to_string()));
            tokio::spawn(server::metrics::serve(listener, shared.clone()));
        }
        server::serve_listeners(clients, controller_listener, shared, shutdown_signal()).await;
        tracing::info!("stopped cleanly");
        Ok(())
    })
}

/// Takes an exclusive lock on `<data>/.lock` for the life of the process, as Kafka does: two
/// brokers on one data directory would overwrite each other's checkpoints and segments.
fn lock_data_dir(data: &std::path::Path) -> Result<std::fs::File, String> {
    use std::os::fd::AsRawFd;
    std::fs::create_dir_all(data).map_err(|e| format!("create {}: {e}", data.display()))?;
    let path = data.join(".lock");
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| format!("open {}: {e}", path.display()))?;
    // The descriptor is `file`'s, an owned File opened just above and alive across the
    // call (it is returned, so the lock lasts); flock takes no pointers.
    // SAFETY: as the lines above say.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => format!("data directory {} is in use by another broker process (it holds {})", data.display(), path.display()),
            _ => format!("lock {}: {e}", path.display()),
        });
    }
    Ok(file)
}

/// Raises the soft limit on open files to the hard one, as Kafka's operators are told to and
/// Go's runtime does by itself: a partition keeps a file open per segment, and with the common
/// soft default of 1,024 a few hundred partitions would fail to open with EMFILE.
fn raise_open_files_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // `&mut limit` points to a live, initialized rlimit of ours, the type getrlimit
    // writes for RLIMIT_NOFILE; nothing else is written.
    // SAFETY: as the lines above say.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 || limit.rlim_cur >= limit.rlim_max {
        return;
    }
    let was = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: `&limit` points to a live, initialized rlimit of ours, which setrlimit only reads.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } == 0 {
        tracing::info!("open files limit raised from {was} to {}", limit.rlim_cur);
    }
}

/// SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("install SIGTERM handler");
    tokio::select! {
        // biased: tokio picks branches with an unseeded RNG otherwise,
        // which breaks replay under madsim.
        biased;
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received"),
        _ = term.recv() => tracing::info!("SIGTERM received"),
    }
}
