//! The `quorum-state` file: a voter's epoch, vote and known leader, as KRaft writes it (JSON,
//! Kafka's field names), replaced atomically through [`write_atomically`] (temp file, sync,
//! rename, directory sync), so a crash leaves the old state or the new one, never a mix.
//!
//! It must never be read leniently: a file that does not parse is an error for the operator,
//! not a fresh start, since forgetting a vote could elect two leaders in one epoch.

use super::{NodeId, QuorumState};
use crate::constants::quorum_state_bytes_max;
use crate::storage::{read_exact_at, write_atomically, Disk};
use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;

/// File name inside the metadata log directory (KRaft's).
pub const QUORUM_STATE_FILE: &str = "quorum-state";

/// KRaft's `quorum-state` fields (`data_version` 0); -1 is "none".
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    #[serde(rename = "leaderId")]
    leader_id: NodeId,
    #[serde(rename = "leaderEpoch")]
    leader_epoch: i32,
    #[serde(rename = "votedId")]
    voted_id: NodeId,
    data_version: i16,
}

pub fn encode(state: &QuorumState) -> Vec<u8> {
    let stored = Stored { leader_id: state.leader.unwrap_or(-1), leader_epoch: state.epoch, voted_id: state.voted_for.unwrap_or(-1), data_version: 0 };
    let mut bytes = serde_json::to_vec(&stored).expect("plain integers always encode");
    bytes.push(b'\n');
    bytes
}

pub fn decode(bytes: &[u8]) -> Result<QuorumState, String> {
    let s: Stored = serde_json::from_slice(bytes).map_err(|e| format!("quorum-state: {e}"))?;
    if s.data_version != 0 || s.leader_epoch < 0 || s.leader_id < -1 || s.voted_id < -1 {
        return Err(format!("quorum-state: unsupported values (version {}, epoch {})", s.data_version, s.leader_epoch));
    }
    let id = |v: NodeId| (v >= 0).then_some(v);
    Ok(QuorumState { epoch: s.leader_epoch, voted_for: id(s.voted_id), leader: id(s.leader_id) })
}

/// Writes `state` to `dir/quorum-state`; durable on return.
pub fn write(disk: &dyn Disk, dir: &Path, state: &QuorumState) -> io::Result<()> {
    write_atomically(disk, &dir.join(QUORUM_STATE_FILE), &encode(state))
}

/// Planted `StateUnsynced` only: `state` written over the file in place, never synced, so a
/// power loss may drop or tear it.
pub fn write_unsynced(disk: &dyn Disk, dir: &Path, state: &QuorumState) -> io::Result<()> {
    let file = disk.open(&dir.join(QUORUM_STATE_FILE), true)?;
    let bytes = encode(state);
    file.truncate(0)?;
    file.write_at(&bytes, 0)
}

/// Reads `dir/quorum-state`; the default state (epoch 0, no vote) when there is none yet.
pub fn read(disk: &dyn Disk, dir: &Path) -> Result<QuorumState, String> {
    let path = dir.join(QUORUM_STATE_FILE);
    if !disk.exists(&path) {
        return Ok(QuorumState::default());
    }
    let err = |e: io::Error| format!("{}: {e}", path.display());
    let file = disk.open(&path, false).map_err(err)?;
    let len = file.len().map_err(err)?;
    if len > quorum_state_bytes_max {
        return Err(format!("{}: {len} bytes, not a quorum-state file", path.display()));
    }
    let mut bytes = vec![0; len as usize];
    read_exact_at(file.as_ref(), &mut bytes, 0).map_err(err)?;
    decode(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::FileDisk;

    #[test]
    fn the_state_round_trips_in_kraft_field_names() {
        let s = QuorumState { epoch: 7, voted_for: Some(2), leader: None };
        let bytes = encode(&s);
        assert_eq!(String::from_utf8_lossy(&bytes), "{\"leaderId\":-1,\"leaderEpoch\":7,\"votedId\":2,\"data_version\":0}\n");
        assert_eq!(decode(&bytes), Ok(s));
    }

    #[test]
    fn a_damaged_file_is_an_error_not_a_fresh_start() {
        assert!(decode(b"{\"leaderId\":-1,\"leaderEp").is_err());
        assert!(decode(b"").is_err());
        assert!(decode(b"{\"leaderId\":-1,\"leaderEpoch\":-4,\"votedId\":2,\"data_version\":0}").is_err());
        assert!(decode(b"{\"leaderId\":-1,\"leaderEpoch\":4,\"votedId\":2,\"data_version\":0,\"x\":1}").is_err());
    }

    #[test]
    fn a_missing_file_is_epoch_zero_and_a_written_one_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let disk = FileDisk::new();
        assert_eq!(read(&disk, dir.path()), Ok(QuorumState::default()));
        let s = QuorumState { epoch: 3, voted_for: Some(1), leader: Some(1) };
        write(&disk, dir.path(), &s).unwrap();
        assert_eq!(read(&disk, dir.path()), Ok(s));
    }
}
