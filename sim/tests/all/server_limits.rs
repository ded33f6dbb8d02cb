//! The server's time limits, in simulated time (minutes pass in milliseconds): a client that
//! stops mid-request is cut off after `request_body_ms_max`, an idle connection after
//! `connections.max.idle.ms`, and a well-behaved client on another connection is unaffected.

use broker_core::broker::{Broker, BrokerConfig};
use broker_core::constants::{connection_idle_ms_max, request_body_ms_max};
use broker_core::server::{self, Shared};
use broker_core::storage::Disk;
use madsim::runtime::{Handle, Runtime};
use sim::disk::SimDisk;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// ApiVersions v0, correlation id 7, client id "t".
fn api_versions() -> Vec<u8> {
    let mut req = vec![];
    req.extend_from_slice(&18i16.to_be_bytes()); // api key: ApiVersions
    req.extend_from_slice(&0i16.to_be_bytes()); // version 0
    req.extend_from_slice(&7i32.to_be_bytes());
    req.extend_from_slice(&1i16.to_be_bytes());
    req.push(b't');
    let mut frame = (req.len() as i32).to_be_bytes().to_vec();
    frame.extend(req);
    frame
}

/// Whether the server closed `s` (a read returns 0) within `within`.
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let mut b = [0u8; 64];
    matches!(tokio::time::timeout(within, s.read(&mut b)).await, Ok(Ok(0)) | Ok(Err(_)))
}

#[test]
fn stalled_requests_and_idle_connections_are_closed_in_simulated_time() {
    Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(async {
        let handle = Handle::current();
        let ip: IpAddr = IpAddr::from([10, 0, 0, 1]);
        let disk = SimDisk::new(1);
        handle
            .create_node()
            .name("broker-0")
            .ip(ip)
            .init(move || {
                let disk = disk.clone();
                async move {
                    let d: Arc<dyn Disk> = Arc::new(disk);
                    let config = BrokerConfig { data_dir: "/data".into(), ..BrokerConfig::default() };
                    let broker = Broker::open(d.clone(), config, server::now_ms()).unwrap();
                    let l = tokio::net::TcpListener::bind("0.0.0.0:9092").await.unwrap();
                    server::serve(l, Shared::new(broker, None, d), std::future::pending()).await;
                }
            })
            .build();
        let client = handle.create_node().name("client").ip(IpAddr::from([10, 0, 1, 1])).build();
        client
            .spawn(async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                let addr = SocketAddr::new(ip, 9092);
                let mut stalled = TcpStream::connect(addr).await.unwrap();
                stalled.write_all(&100i32.to_be_bytes()).await.unwrap();
                stalled.write_all(&[0u8; 10]).await.unwrap();
                stalled.flush().await.unwrap();
                let mut idle = TcpStream::connect(addr).await.unwrap();
                let mut good = TcpStream::connect(addr).await.unwrap();
                // Not closed early...
                assert!(!closed_within(&mut stalled, Duration::from_millis(request_body_ms_max - 1_000)).await);
                // ...closed once the request deadline passes.
                assert!(closed_within(&mut stalled, Duration::from_millis(2_000)).await, "stalled request not cut off");
                // The well-behaved connection still gets answers.
                good.write_all(&api_versions()).await.unwrap();
                good.flush().await.unwrap();
                let mut head = [0u8; 10];
                good.read_exact(&mut head).await.unwrap();
                assert_eq!(&head[4..8], &7i32.to_be_bytes(), "correlation id");
                assert_eq!(&head[8..10], &0i16.to_be_bytes(), "no error");
                // An idle connection lives until connections.max.idle.ms, then is closed.
                let idle_left = Duration::from_millis(connection_idle_ms_max - request_body_ms_max - 5_000);
                assert!(!closed_within(&mut idle, idle_left).await);
                assert!(closed_within(&mut idle, Duration::from_millis(10_000)).await, "idle connection not closed");
            })
            .await
            .unwrap();
    });
}
