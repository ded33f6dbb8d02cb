//! What waits for what on a slow disk, in simulated time: while one partition's fsync or write
//! is under way (its latency owed to the simulated clock), a produce to another partition of the same
//! node and a Metadata request are answered without waiting for it, and the produce that asked
//! for it waits, and only the new topic waits for the file-system sync after its creation — exactly
//! as on real files (broker-core/tests/all/slow_disk.rs runs the same
//! body on a real disk and real sockets).

use broker_core::server;
use broker_core::storage::hooked::Hooked;
use broker_core::storage::Disk;
use broker_core::testing::{flush_every_batch_node, node_serving, slow_creation_stops_only_its_topic, slow_io_stops_only_its_partition, SlowDisk};
use madsim::runtime::{Handle, Runtime};
use sim::disk::SimDisk;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long topic `a`'s fsync takes once armed, in simulated time.
const slow_sync: Duration = Duration::from_millis(800);

/// Runs the slow-disk test body against a simulated node whose disk is `slow` and whose shell
/// state `build` makes.
fn run_slow(slow: SlowDisk, build: fn(Arc<dyn Disk>, &Path, SocketAddr) -> Arc<server::Shared>) -> broker_core::testing::SlowIoTimes {
    run_slow_body(slow, build, false)
}

/// [`run_slow`], or with `create` the body whose slow call is a topic's creation sync.
fn run_slow_body(slow: SlowDisk, build: fn(Arc<dyn Disk>, &Path, SocketAddr) -> Arc<server::Shared>, create: bool) -> broker_core::testing::SlowIoTimes {
    Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(async move {
        let handle = Handle::current();
        let ip: IpAddr = IpAddr::from([10, 0, 0, 1]);
        let addr = SocketAddr::new(ip, 9092);
        let (armed, started) = (slow.armed.clone(), slow.started.clone());
        let slow: Arc<dyn Disk> = Arc::new(Hooked::new(Arc::new(SimDisk::new(1)), Arc::new(slow)));
        handle
            .create_node()
            .name("broker-0")
            .ip(ip)
            .init(move || {
                let disk: Arc<dyn Disk> = slow.clone();
                async move {
                    let listener = tokio::net::TcpListener::bind("0.0.0.0:9092").await.unwrap();
                    server::serve(listener, build(disk, Path::new("/data"), addr), std::future::pending()).await;
                }
            })
            .build();
        let client = handle.create_node().name("client").ip(IpAddr::from([10, 0, 1, 1])).build();
        client
            .spawn(async move {
                match create {
                    false => slow_io_stops_only_its_partition(addr, armed, started).await,
                    true => slow_creation_stops_only_its_topic(addr, armed, started).await,
                }
            })
            .await
            .unwrap()
    })
}

#[test]
fn a_slow_fsync_on_one_partition_stops_only_that_partition() {
    let t = run_slow(SlowDisk::syncs("/a-0/", slow_sync), flush_every_batch_node);
    t.assert_only_its_partition_waited(slow_sync, "fsync");
}

#[test]
fn a_slow_write_on_one_partition_stops_only_that_partition() {
    let never = |disk, dir: &Path, addr| node_serving(disk, dir, addr, |c| c.log.flush = broker_core::log::FlushPolicy::Never);
    let t = run_slow(SlowDisk::writes("/a-0/", slow_sync), never);
    t.assert_only_its_partition_waited(slow_sync, "write");
}

#[test]
fn a_slow_file_system_sync_after_creating_a_topic_stops_only_that_topic() {
    let t = run_slow_body(SlowDisk::sync_all(slow_sync), flush_every_batch_node, true);
    t.assert_only_its_partition_waited(slow_sync, "creation syncfs");
}
