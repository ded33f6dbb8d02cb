//! A log that fails while this node leads it: reopened in place, but led again only at a later
//! leader epoch (`upkeep::reopen_failed`, `reconcile`).

use super::*;
use crate::storage::hooked::{Hook, Hooked, Op};
use crate::storage::FileDisk;
use crate::testing::{one_node_on, register, run_syncs};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

/// Fails writes to `t-0`'s segment files while armed, as a full disk does.
#[derive(Default)]
struct FullDisk {
    armed: AtomicBool,
}

impl Hook for FullDisk {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        let path = match op {
            Op::Append { path, .. } | Op::WriteAt { path, .. } => path,
            _ => return Ok(()),
        };
        match self.armed.load(SeqCst) && path.to_string_lossy().contains("t-0") {
            true => Err(std::io::Error::other("no space left on device")),
            false => Ok(()),
        }
    }
}

#[test]
fn a_leader_whose_log_failed_leads_it_again_only_at_a_later_epoch() {
    // swarm-quorum seed 71013: reopened at once at the same epoch, the leader rebuilt its
    // ISR from an image older than the controller's and moved the mark past a member.
    let tmp = tempfile::tempdir().unwrap();
    let full = Arc::new(FullDisk::default());
    let cfg = BrokerConfig { write_behind: true, ..config(tmp.path()) };
    let node = one_node_on(Arc::new(Hooked::new(Arc::new(FileDisk::new()), full.clone())), cfg);
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    let epoch = node.broker().leader_epoch("t", 0);
    let produce = |value: &[u8], now: u64| {
        let mut b = node.broker();
        let mut out = Vec::new();
        let produced = b.produce("t", 0, &build(&[value], 1), 1, now, &mut out);
        run_syncs(&mut b, out, now);
        produced.map(|p| p.base_offset)
    };
    assert_eq!(produce(b"a", 0).unwrap(), 0);
    full.armed.store(true, SeqCst);
    produce(b"b", 10).unwrap(); // staged; its write job fails
    full.armed.store(false, SeqCst);
    let offline = produce(b"x", 11).unwrap_err();
    assert_eq!(offline.kafka_error(true), Code::KafkaStorageError, "{offline:?}");

    // The disk answers again: the node hands the leadership over, and does not lead the
    // partition again at the epoch it failed in, however often it looks.
    let actions = node.broker().tick(20);
    assert!(actions.contains(&Action::Reregister), "{actions:?}");
    for now in [20, 2_000, 5_000] {
        let _ = node.broker().tick(now);
        let refused = produce(b"c", now).unwrap_err();
        assert_eq!(refused.kafka_error(true), Code::KafkaStorageError, "{refused:?}");
        assert_eq!(node.broker().image().partition("t", 0).unwrap().leader_epoch, epoch, "the image has not moved yet");
    }

    // The registration moves the leadership; the replica opens at the later epoch, with what
    // the disk kept.
    register(&node, 6_000);
    let _ = node.broker().tick(8_000);
    let now_epoch = node.broker().leader_epoch("t", 0);
    assert!(now_epoch > epoch, "leads again at {now_epoch}, after {epoch}");
    assert_eq!(produce(b"d", 8_000).unwrap(), 1);
    let f = node.broker().fetch("t", 0, 0, 1 << 20, true, consumer, 8_000, &mut Vec::new()).unwrap();
    assert_eq!(f.high_watermark, 2);
}
