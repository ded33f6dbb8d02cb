//! Disk faults: per-call latency owed through `take_stall`, a byte capacity (ENOSPC) and EIO on
//! chosen files — the model's "Faults" section in code.
//!
//! Faults live beside the bytes, never in them: the checks here only ever answer "go ahead" or
//! an error before a call changes anything, and must never touch a file's bytes or the
//! namespace. Latency is the one draw from the disk's RNG they make.

use super::paths::fail;
use super::State;
use rand::Rng;
use std::io::{self, ErrorKind};
use std::path::Path;

/// A latency bound above one minute per call is surely a unit mistake (seconds given as ns).
const LATENCY_NS_LIMIT: u64 = 60_000_000_000;

/// Disk faults for one node. All default to off; [`DiskFaults::validate`] checks the ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskFaults {
    /// Least stall each IO call owes, in nanoseconds (drawn uniformly up to `latency_ns_max`).
    pub latency_ns_min: u64,
    /// Most stall each IO call owes, in nanoseconds. Calls charged: everything but `exists`
    /// and `len`, which real systems answer from cached metadata.
    pub latency_ns_max: u64,
    /// Cap on the total current bytes of all live files. A write, append or truncate that would
    /// grow the total past it fails with `ErrorKind::StorageFull` and changes nothing.
    pub capacity_bytes: Option<u64>,
    /// A file whose path (as it was opened) contains any of these substrings fails `read_at`,
    /// `write_at`, `append`, `truncate` and `sync` with raw OS error EIO; namespace calls still
    /// work, as with bad blocks under one file. An empty string matches every file.
    pub eio_paths: Vec<String>,
    /// The process dies at this call: counting every charged call since the disk was made
    /// ([`SimDisk::ops`]), the `n`th and every later one fail with `ErrorKind::Other` ("process
    /// died") and change nothing, as if the process had stopped just before it. The harness then
    /// crashes the disk to decide what survives. This reaches crash points inside a synchronous
    /// run of calls (a whole cleaning pass) that a kill, landing only at an await, cannot.
    ///
    /// [`SimDisk::ops`]: super::SimDisk::ops
    pub dead_from_op: Option<u64>,
}

impl DiskFaults {
    /// Checks that the settings make sense; the message names the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if self.latency_ns_min > self.latency_ns_max {
            return Err(format!(
                "DiskFaults: latency_ns_min {} > latency_ns_max {}",
                self.latency_ns_min, self.latency_ns_max
            ));
        }
        if self.latency_ns_max > LATENCY_NS_LIMIT {
            return Err(format!(
                "DiskFaults: latency_ns_max {} ns is over a minute per call; unit mistake?",
                self.latency_ns_max
            ));
        }
        Ok(())
    }
}

/// Harness configuration is checked once, loudly: a bad fault mix is a harness bug.
pub(super) fn assert_valid(faults: &DiskFaults) {
    if let Err(msg) = faults.validate() {
        panic!("{msg}");
    }
}

impl State {
    /// Counts one charged call, or fails it (changing nothing) once the process is dead.
    pub(super) fn count_op(&mut self, path: &Path) -> io::Result<()> {
        if self.faults.dead_from_op.is_some_and(|n| self.ops >= n) {
            return Err(fail(ErrorKind::Other, "call on", path, "the process died (dead_from_op)"));
        }
        self.ops += 1;
        Ok(())
    }

    pub(super) fn charge_latency(&mut self) {
        let (min, max) = (self.faults.latency_ns_min, self.faults.latency_ns_max);
        let ns = if max > min { self.rng.gen_range(min..=max) } else { min };
        self.stall_ns = self.stall_ns.saturating_add(ns);
    }

    pub(super) fn check_eio(&self, path: &Path) -> io::Result<()> {
        let path = path.to_string_lossy();
        if self.faults.eio_paths.iter().any(|bad| path.contains(bad.as_str())) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        Ok(())
    }

    /// ENOSPC if a call that `grows` the files would bring their total to `used` bytes, past
    /// the capacity. Shrinking and overwriting always fit.
    pub(super) fn check_space(&self, path: &Path, grows: bool, used: u64) -> io::Result<()> {
        if grows && self.faults.capacity_bytes.is_some_and(|cap| used > cap) {
            return Err(fail(ErrorKind::StorageFull, "write", path, "no space left on device"));
        }
        Ok(())
    }
}
