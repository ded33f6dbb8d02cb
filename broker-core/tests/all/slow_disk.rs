//! What waits for what on a slow disk, on real sockets and real files: while one partition's
//! fsync, or its write (the kernel throttling a writer), is under way, a produce to another
//! partition of the same node and a Metadata request are answered without waiting for it, and
//! the produce that asked for it waits for it; while the file-system sync after a topic's
//! creation is under way, only that topic's produce waits for it.
//! The same body runs in the simulator (sim/tests/all/slow_disk.rs), so both builds model the
//! node's disk alike (docs/architecture.md, "IO at the edge").

use broker_core::server;
use broker_core::storage::hooked::Hooked;
use broker_core::storage::{Disk, FileDisk};
use broker_core::testing::{flush_every_batch_node, node_serving, slow_creation_stops_only_its_topic, slow_io_stops_only_its_partition, slow_metadata_sync_stops_only_the_quorum, SlowDisk, SlowIoTimes};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long topic `a`'s fsync, or its write, takes once armed.
const slow_call: Duration = Duration::from_millis(800);

/// Runs the slow-disk test body against a real one-node broker whose disk is `slow` and whose
/// shell state `build` makes.
fn run_slow(slow: SlowDisk, build: fn(Arc<dyn Disk>, &Path, SocketAddr) -> Arc<server::Shared>) -> SlowIoTimes {
    run_slow_body(slow, build, Body::Produce)
}

/// Which body runs: a slow call of one partition's produce, of a topic's creation, or of the
/// metadata log's sync.
enum Body {
    Produce,
    Create,
    Metadata,
}

fn run_slow_body(slow: SlowDisk, build: fn(Arc<dyn Disk>, &Path, SocketAddr) -> Arc<server::Shared>, body: Body) -> SlowIoTimes {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (armed, started) = (slow.armed.clone(), slow.started.clone());
        let disk: Arc<dyn Disk> = Arc::new(Hooked::new(Arc::new(FileDisk::new()), Arc::new(slow)));
        let node = tokio::spawn(server::serve(listener, build(disk, dir.path(), addr), std::future::pending()));
        let t = match body {
            Body::Produce => slow_io_stops_only_its_partition(addr, armed, started).await,
            Body::Create => slow_creation_stops_only_its_topic(addr, armed, started).await,
            Body::Metadata => slow_metadata_sync_stops_only_the_quorum(addr, armed, started).await,
        };
        node.abort();
        t
    })
}

#[test]
fn a_slow_fsync_on_one_partition_stops_only_that_partition() {
    let t = run_slow(SlowDisk::syncs("/a-0/", slow_call), flush_every_batch_node);
    t.assert_only_its_partition_waited(slow_call, "fsync");
}

#[test]
fn a_slow_write_on_one_partition_stops_only_that_partition() {
    // The default flush policy: no fsync, only the page-cache write.
    let never = |disk, dir: &Path, addr| node_serving(disk, dir, addr, |c| c.log.flush = broker_core::log::FlushPolicy::Never);
    let t = run_slow(SlowDisk::writes("/a-0/", slow_call), never);
    t.assert_only_its_partition_waited(slow_call, "write");
}

#[test]
fn a_slow_file_system_sync_after_creating_a_topic_stops_only_that_topic() {
    // The sync that makes a created topic's replicas durable runs off the node's gate: a
    // `syncfs` on a loaded broker flushes every dirty page (docs/benchmarks.md, 1.3-1.5 s).
    let t = run_slow_body(SlowDisk::sync_all(slow_call), flush_every_batch_node, Body::Create);
    t.assert_only_its_partition_waited(slow_call, "creation syncfs");
}

/// A quorum decision holds the quorum's lock across its metadata log's sync (a topic of 200
/// partitions: 170 ms on this machine). A broker's Fetch of the metadata log arriving meanwhile
/// waits for the quorum's gate; decided under the node's gate it stopped every request of the
/// node (and blocked a runtime thread) until the sync ended. Real build only: the simulator
/// stalls a gate after its decision, with the quorum's lock already let go.
#[test]
fn a_slow_metadata_log_sync_stops_only_the_quorum() {
    let t = run_slow_body(SlowDisk::syncs("/__cluster_metadata-0/", slow_call), flush_every_batch_node, Body::Metadata);
    t.assert_only_its_partition_waited(slow_call, "metadata log sync");
}
