//! What waits for what on a slow disk, on real sockets and real files: while one partition's
//! fsync, or its write (the kernel throttling a writer), is under way, a produce to another
//! partition of the same node and a Metadata request are answered without waiting for it, and
//! the produce that asked for it waits for it.
//! The same body runs in the simulator (sim/tests/all/slow_disk.rs), so both builds model the
//! node's disk alike (docs/architecture.md, "IO at the edge").

use broker_core::server;
use broker_core::storage::hooked::Hooked;
use broker_core::storage::{Disk, FileDisk};
use broker_core::testing::{flush_every_batch_node, node_serving, slow_io_stops_only_its_partition, SlowDisk};
use std::sync::Arc;
use std::time::Duration;

/// How long topic `a`'s fsync takes once armed.
const slow_sync: Duration = Duration::from_millis(800);

#[test]
fn a_slow_fsync_on_one_partition_stops_only_that_partition() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let slow = Arc::new(SlowDisk::syncs("/a-0/", slow_sync));
        let (armed, started) = (slow.armed.clone(), slow.started.clone());
        let disk: Arc<dyn Disk> = Arc::new(Hooked::new(Arc::new(FileDisk::new()), slow));
        let node = tokio::spawn(server::serve(listener, flush_every_batch_node(disk, dir.path(), addr), std::future::pending()));
        let t = slow_io_stops_only_its_partition(addr, armed, started).await;
        // Generous margins: this machine may be busy, but nothing here may wait out the fsync.
        assert!(t.other_partition < slow_sync / 2, "the produce to b waited for a's {slow_sync:?} fsync: {t:?}");
        assert!(t.metadata < slow_sync / 2, "Metadata waited for a's {slow_sync:?} fsync: {t:?}");
        assert!(t.own >= slow_sync, "the produce to a was answered before its {slow_sync:?} fsync: {t:?}");
        node.abort();
    });
}

/// How long a write to topic `a`'s segment takes once armed.
const slow_write: Duration = Duration::from_millis(800);

#[test]
fn a_slow_write_on_one_partition_stops_only_that_partition() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let slow = Arc::new(SlowDisk::writes("/a-0/", slow_write));
        let (armed, started) = (slow.armed.clone(), slow.started.clone());
        let disk: Arc<dyn Disk> = Arc::new(Hooked::new(Arc::new(FileDisk::new()), slow));
        // The default flush policy: no fsync, only the page-cache write.
        let shared = node_serving(disk, dir.path(), addr, |c| c.log.flush = broker_core::log::FlushPolicy::Never);
        let node = tokio::spawn(server::serve(listener, shared, std::future::pending()));
        let t = slow_io_stops_only_its_partition(addr, armed, started).await;
        assert!(t.other_partition < slow_write / 2, "the produce to b waited for a's {slow_write:?} write: {t:?}");
        assert!(t.metadata < slow_write / 2, "Metadata waited for a's {slow_write:?} write: {t:?}");
        assert!(t.own >= slow_write, "the produce to a was answered before its {slow_write:?} write: {t:?}");
        node.abort();
    });
}
