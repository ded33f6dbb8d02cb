//! Test support (for this crate's tests and the simulator's): a one-node cluster in process — the real broker and the real controller with
//! its metadata log on real files — with [`sync`] doing synchronously what the shell's peer
//! tasks do over the network (register, heartbeat, forward auto-creation, apply metadata).

use crate::broker::{Broker, BrokerConfig};
use crate::controller::quorum::Quorum;
use crate::metadata::decode_records;
use crate::protocol::Node;
use crate::storage::{Disk, FileDisk};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub fn config(dir: &Path) -> BrokerConfig {
    BrokerConfig { data_dir: dir.to_path_buf(), ..BrokerConfig::default() }
}

/// A node that is its own controller, registered and unfenced, with no topics, on real files.
pub fn one_node(config: BrokerConfig) -> Node {
    one_node_on(Arc::new(FileDisk::new()), config)
}

/// [`one_node`] on any disk.
pub fn one_node_on(disk: Arc<dyn Disk>, config: BrokerConfig) -> Node {
    let (quorum, _) = Quorum::open(disk.clone(), &config.data_dir, crate::server::config::controller_config(&config), 0).unwrap();
    let broker = Broker::open(disk, config, 0).unwrap();
    let node = Node::new(broker, Some(quorum));
    register(&node, 0);
    node
}

/// Registers the node with its controller and heartbeats until it is unfenced.
pub fn register(node: &Node, now: u64) -> i64 {
    let c = node.broker().config().clone();
    let epoch = {
        let mut q = node.controller().unwrap();
        let next = q.end_offset();
        let records = q.controller_mut().register(c.node_id, &c.advertised_host, c.advertised_port, next, now).unwrap();
        q.commit(records, now).unwrap();
        next
    };
    node.broker().registered(epoch, now);
    for _ in 0..2 {
        sync(node, now);
    }
    epoch
}

/// One round of the peer tasks: heartbeat, forward auto-creations, apply new metadata.
pub fn sync(node: &Node, now: u64) {
    let (id, epoch_offset) = {
        let b = node.broker();
        (b.config().node_id, b.image().offset)
    };
    let names = node.broker().auto_create_requests();
    {
        let mut q = node.controller().unwrap();
        if let Some(epoch) = q.controller().image().brokers.get(&id).map(|b| b.epoch) {
            let (_, records) = q.controller_mut().heartbeat(id, epoch, epoch_offset, now).unwrap();
            q.commit(records, now).unwrap();
        }
        for n in names {
            match q.controller().create_topic(&n, -1, -1, BTreeMap::new(), now) {
                Ok((_, records)) => {
                    q.commit(records, now).unwrap();
                }
                Err(_) => node.broker().auto_create_failed(&n),
            }
        }
    }
    apply_metadata(node, now);
}

/// Applies every committed metadata record the broker has not seen.
pub fn apply_metadata(node: &Node, now: u64) {
    let from = node.broker().image().offset + 1;
    let bytes = node.controller().unwrap().read(from, 1 << 30).unwrap();
    let run: Vec<_> = decode_records(&bytes).unwrap().into_iter().filter(|(o, _)| *o >= from).collect();
    node.broker().apply_metadata_batch(&run, now);
}

/// Creates a topic through the controller and applies it.
pub fn create(node: &Node, name: &str, partitions: i32, config: BTreeMap<String, String>) -> Result<[u8; 16], crate::controller::Error> {
    let (id, records) = node.controller().unwrap().controller().create_topic(name, partitions, -1, config, 0)?;
    node.controller().unwrap().commit(records, 0).unwrap();
    apply_metadata(node, 0);
    Ok(id)
}

/// Deletes a topic through the controller and applies it.
pub fn delete(node: &Node, name: &str) -> Result<(), crate::controller::Error> {
    let records = node.controller().unwrap().controller().delete_topic(name)?;
    node.controller().unwrap().commit(records, 0).unwrap();
    apply_metadata(node, 0);
    Ok(())
}
