//! What waits for what on a slow disk, on real sockets and real files: while one partition's
//! fsync is under way, a produce to another partition of the same node waits for it. The same
//! body runs in the simulator (sim/tests/all/slow_disk.rs), so both builds model the node's
//! disk alike (docs/architecture.md, "IO at the edge").

use broker_core::broker::{Broker, BrokerConfig};
use broker_core::controller::quorum::Quorum;
use broker_core::log::{FlushPolicy, LogConfig};
use broker_core::server::{self, config::controller_config, Shared};
use broker_core::storage::{Disk, FileDisk};
use broker_core::testing::{slow_fsync_delays_other_partitions, SlowSync};
use std::sync::Arc;
use std::time::Duration;

/// How long topic `a`'s fsync takes once armed.
const slow_sync: Duration = Duration::from_millis(800);

#[test]
fn a_slow_fsync_on_one_partition_delays_produce_on_another() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let slow = SlowSync::new(Arc::new(FileDisk::new()), "/a-0/", slow_sync);
        let (armed, started) = (slow.armed.clone(), slow.started.clone());
        let disk: Arc<dyn Disk> = Arc::new(slow);
        let config = BrokerConfig {
            data_dir: dir.path().to_path_buf(),
            advertised_port: addr.port() as i32,
            controller_addr: addr.to_string(),
            log: LogConfig { flush: FlushPolicy::EveryBatch, ..LogConfig::default() },
            ..BrokerConfig::default()
        };
        let now = server::now_ms();
        let (quorum, _) = Quorum::open(disk.clone(), &config.data_dir, controller_config(&config), now).unwrap();
        let broker = Broker::open(disk.clone(), config, now).unwrap();
        let node = tokio::spawn(server::serve(listener, Shared::new(broker, Some(quorum), disk), std::future::pending()));
        let waited = slow_fsync_delays_other_partitions(addr, armed, started).await;
        assert!(waited >= slow_sync, "the produce to b was answered {waited:?} after the one to a, inside a's {slow_sync:?} fsync");
        node.abort();
    });
}
