//! What waits for what on a slow disk, on real sockets and real files: while one partition's
//! fsync is under way, a produce to another partition of the same node waits for it. The same
//! body runs in the simulator (sim/tests/all/slow_disk.rs), so both builds model the node's
//! disk alike (docs/architecture.md, "IO at the edge").

use broker_core::server;
use broker_core::storage::{Disk, FileDisk};
use broker_core::testing::{flush_every_batch_node, slow_fsync_delays_other_partitions, SlowSync};
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
        let node = tokio::spawn(server::serve(listener, flush_every_batch_node(disk, dir.path(), addr), std::future::pending()));
        let waited = slow_fsync_delays_other_partitions(addr, armed, started).await;
        assert!(waited >= slow_sync, "the produce to b was answered {waited:?} after the one to a, inside a's {slow_sync:?} fsync");
        node.abort();
    });
}
