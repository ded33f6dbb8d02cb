//! The log inside a madsim node that is killed mid-write, then loses power: proof that the
//! simulated build runs the real log end to end. Each round a fresh node opens the log on the
//! surviving `SimDisk` and appends, sleeping off the disk's simulated latency between calls, so
//! the kill lands between a write and its sync; then the harness applies power-loss semantics
//! and checks the recovered log against what the node had acknowledged.

use super::log_crash::{check_recovered, Model};
use broker_core::log::batch::build;
use broker_core::log::{FlushPolicy, Log, LogConfig};
use broker_core::storage::Disk;
use madsim::runtime::{Handle, Runtime};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim::disk::{CrashMode, DiskFaults, SimDisk};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const DIR: &str = "/data/orders-0";

fn config() -> LogConfig {
    LogConfig { segment_bytes: 4096, index_interval_bytes: 256, flush: FlushPolicy::EveryMessages(7), ..LogConfig::default() }
}

/// The node's workload: append forever, recording each acknowledged batch in the model
/// before the next await point (a kill can only land at an await).
async fn writer(disk: SimDisk, model: Arc<Mutex<Model>>) {
    let (mut log, _) = Log::open(Arc::new(disk.clone()) as Arc<dyn Disk>, Path::new(DIR), config(), 0).expect("open on node");
    let mut i = 0u64;
    loop {
        i += 1;
        let value = format!("record {i}").into_bytes();
        let mut batch = build(&[&value, &value], i as i64);
        let info = log.append(&mut batch, 1, i).expect("append on node");
        {
            let mut m = model.lock().expect("model");
            m.batches.push((info.base_offset, batch));
            m.synced_below = m.synced_below.max(log.recovery_point());
        }
        tokio::time::sleep(disk.take_stall().max(Duration::from_micros(1))).await;
    }
}

/// Runs `rounds` kill + power-loss rounds under madsim with `seed`; returns the final log.
fn run(seed: u64, rounds: usize) -> Vec<(i64, Vec<u8>)> {
    let rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
    rt.block_on(async move {
        let handle = Handle::current();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let faults = DiskFaults { latency_ns_min: 20_000, latency_ns_max: 3_000_000, ..DiskFaults::default() };
        let disk = SimDisk::with_faults(seed, faults);
        let model = Arc::new(Mutex::new(Model::default()));
        let mut killed_with_pending = 0;
        for round in 0..rounds {
            let node = handle.create_node().name(format!("broker-{round}")).build();
            node.spawn(writer(disk.clone(), model.clone()));
            tokio::time::sleep(Duration::from_micros(rng.gen_range(1..60_000))).await;
            handle.kill(node.id());
            if disk.pending_ops() > 0 {
                killed_with_pending += 1;
            }
            disk.crash(CrashMode::PowerLoss);
            let (log, _) = Log::open(Arc::new(disk.clone()) as Arc<dyn Disk>, Path::new(DIR), config(), 0)
                .unwrap_or_else(|e| panic!("seed {seed} round {round}: open after power loss: {e}"));
            let mut m = model.lock().unwrap();
            check_recovered(&log, &mut m).unwrap_or_else(|e| panic!("seed {seed} round {round}: {e}"));
        }
        assert!(killed_with_pending * 2 >= rounds, "kills should mostly land mid-write ({killed_with_pending}/{rounds})");
        let (log, _) = Log::open(Arc::new(disk.clone()) as Arc<dyn Disk>, Path::new(DIR), config(), 0).unwrap();
        assert!(log.log_end_offset() > 0, "something survived {rounds} rounds");
        super::log_crash::read_all(&log).unwrap()
    })
}

#[test]
fn log_survives_kill_and_power_loss_inside_madsim_nodes() {
    for seed in 0..20 {
        run(seed, 15);
    }
}

#[test]
fn madsim_rounds_replay_identically() {
    assert_eq!(run(3, 10), run(3, 10));
}
