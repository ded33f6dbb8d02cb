//! One broker node (its own controller) on a fresh temporary data directory, real files
//! through [`FileDisk`](crate::storage::FileDisk), and one request run to completion the way
//! the shell's `answer` runs it — parked fetches asked again once their wait is over, waiting
//! requests polled until they answer or time out — synchronously, with a counter for a clock.

use crate::broker::Action;
use crate::node::{self, Attempt, Node, Outcome};
use bytes::Bytes;
use std::path::PathBuf;

/// Where the fuzz targets put their data directories: tmpfs when there is one (a target opens
/// a node per input, thousands a second, and fsync there costs nothing), else the temp dir.
fn scratch_root() -> PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() }
}

/// A node the targets send requests to, removed with its data directory when dropped.
pub struct Scratch {
    pub node: Node,
    /// Milliseconds; the targets advance it, nothing reads a clock.
    pub now: u64,
    _dir: tempfile::TempDir,
}

impl Default for Scratch {
    fn default() -> Scratch {
        Scratch::new()
    }
}

impl Scratch {
    /// A registered, unfenced node with no topics. Segments are small (4 KiB, an index entry
    /// every 256 bytes) so that rolls, index lookups and retention are reached by small inputs;
    /// the offsets topic has one partition so that a FindCoordinator does not open fifty logs.
    pub fn new() -> Scratch {
        let dir = tempfile::Builder::new().prefix("seedlog-fuzz-").tempdir_in(scratch_root()).expect("a temporary data directory");
        let mut config = crate::testing::config(dir.path());
        config.groups.offsets_partitions = 1;
        config.log.segment_bytes = 4096;
        config.log.index_interval_bytes = 256;
        let node = crate::testing::one_node(config);
        Scratch { node, now: 1_700_000_000_000, _dir: dir }
    }

    /// Runs one request frame (no size prefix) to its answer: a reply, no reply, or a close.
    /// Panics if the broker breaks the shell's contract: a final attempt that parks again, or
    /// a waiting request that does not answer once its time is up.
    pub fn answer(&mut self, frame: &Bytes) -> Outcome {
        let mut actions: Vec<Action> = Vec::new();
        // As the shell does: decoded, and a produce's batches checked, off the node's lock.
        let mut outcome = node::handle(&self.node, frame, self.now, Attempt::First, &mut actions);
        // A ShareFetch that found records unread: read, then decided again, as the shell does
        // (once per read: a decision with its re-read asks for no other).
        if let Outcome::ShareRead { job, .. } = outcome {
            outcome = node::handle_read(&self.node, frame, self.now, Attempt::Again, Some(job.run(true)), &mut actions);
            assert!(!matches!(outcome, Outcome::ShareRead { .. }), "a decision with its re-read asked for another");
        }
        if let Outcome::Park { wait_ms, .. } = outcome {
            // Nothing else arrives on this connection: the fetch waits out its max_wait.
            self.now += wait_ms;
            outcome = node::handle(&self.node, frame, self.now, Attempt::Final, &mut actions);
            if let Outcome::ShareRead { job, .. } = outcome {
                outcome = node::handle_read(&self.node, frame, self.now, Attempt::Final, Some(job.run(true)), &mut actions);
            }
            assert!(!matches!(outcome, Outcome::Park { .. } | Outcome::Wait(_) | Outcome::ShareRead { .. }), "a final attempt must answer: {outcome:?}");
        }
        if let Outcome::Wait(mut waiting) = outcome {
            // As the shell does: the coordinator's answers go to the request holding the ticket.
            waiting.take_answers(&mut actions);
            outcome = match waiting.poll(&self.node, false) {
                Some(answer) => answer,
                None => {
                    // What the peer tasks would do meanwhile (forward, commit, apply metadata).
                    let mut later = self.sync();
                    waiting.take_answers(&mut later);
                    match waiting.poll(&self.node, false) {
                        Some(answer) => answer,
                        None => waiting.poll(&self.node, true).expect("a waiting request answers once its time is up"),
                    }
                }
            };
        }
        outcome
    }

    /// One round of the peer tasks and the shell's timers: metadata forwarded and applied,
    /// then the broker's and the group coordinator's time-driven work.
    /// Returns what the timers' decision asked for.
    pub fn sync(&mut self) -> Vec<Action> {
        crate::testing::sync(&self.node, self.now);
        self.node.input(crate::node::Input::Tick { checkpoint: false }, self.now)
    }
}
