//! What waits for what on a slow disk, in simulated time: while one partition's fsync is under
//! way (its latency owed to the simulated clock), a produce to another partition of the same
//! node and a Metadata request are answered without waiting for it, and the produce that asked
//! for it waits — exactly as on real files (broker-core/tests/all/slow_disk.rs runs the same
//! body on a real disk and real sockets).

use broker_core::server;
use broker_core::storage::hooked::Hooked;
use broker_core::storage::Disk;
use broker_core::testing::{flush_every_batch_node, slow_fsync_stops_only_its_partition, SlowSync};
use madsim::runtime::{Handle, Runtime};
use sim::disk::SimDisk;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long topic `a`'s fsync takes once armed, in simulated time.
const slow_sync: Duration = Duration::from_millis(800);

#[test]
fn a_slow_fsync_on_one_partition_stops_only_that_partition() {
    Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(async {
        let handle = Handle::current();
        let ip: IpAddr = IpAddr::from([10, 0, 0, 1]);
        let addr = SocketAddr::new(ip, 9092);
        let slow = Arc::new(SlowSync::new("/a-0/", slow_sync));
        let (armed, started) = (slow.armed.clone(), slow.started.clone());
        let slow: Arc<dyn Disk> = Arc::new(Hooked::new(Arc::new(SimDisk::new(1)), slow));
        handle
            .create_node()
            .name("broker-0")
            .ip(ip)
            .init(move || {
                let disk: Arc<dyn Disk> = slow.clone();
                async move {
                    let listener = tokio::net::TcpListener::bind("0.0.0.0:9092").await.unwrap();
                    server::serve(listener, flush_every_batch_node(disk, Path::new("/data"), addr), std::future::pending()).await;
                }
            })
            .build();
        let client = handle.create_node().name("client").ip(IpAddr::from([10, 0, 1, 1])).build();
        let t = client.spawn(async move { slow_fsync_stops_only_its_partition(addr, armed, started).await }).await.unwrap();
        assert!(t.other_partition < slow_sync / 2, "the produce to b waited for a's {slow_sync:?} fsync: {t:?}");
        assert!(t.metadata < slow_sync / 2, "Metadata waited for a's {slow_sync:?} fsync: {t:?}");
        assert!(t.own >= slow_sync, "the produce to a was answered before its {slow_sync:?} fsync: {t:?}");
    });
}
