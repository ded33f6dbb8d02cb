//! The real broker: `cargo run --release -p broker-core --bin broker` serves the Kafka protocol
//! on 127.0.0.1:9092 with data in ./data, on embedded defaults. The IO edge only: parse
//! settings, open the data directory on real files, run the shell until SIGINT or SIGTERM.

use broker_core::broker::Broker;
use broker_core::server::{self, config};
use broker_core::storage::{Disk, FileDisk};
use clap::Parser;
use std::sync::Arc;

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
    let (listen, config) = config::resolve(&flags)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| format!("runtime: {e}"))?;
    runtime.block_on(async move {
        let disk: Arc<dyn Disk> = Arc::new(FileDisk::new());
        let data = config.data_dir.clone();
        let (broker, notes) = Broker::open(disk.clone(), config, server::now_ms()).map_err(|e| format!("opening {}: {e}", data.display()))?;
        for note in notes {
            tracing::warn!("{note}");
        }
        tracing::info!("{} topic(s) in {}", broker.topics().len(), data.display());
        let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| format!("listen on {listen}: {e}"))?;
        tracing::info!("listening on {listen}");
        server::serve(listener, server::Shared::new(broker, disk), shutdown_signal()).await;
        tracing::info!("stopped cleanly");
        Ok(())
    })
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
