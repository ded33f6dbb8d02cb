//! Log defects kept so the simulator can plant them (`broker::PlantedBug`) and prove its
//! checkers catch them. Never called unless a simulated broker plants the bug; nothing here
//! may be used as the log's real behaviour.

use super::{Log, LogError, RECOVERY_POINT_FILE};
use crate::storage::Disk;
use std::path::Path;

impl Log {
    /// Plants `CheckpointInPlace`: from now on [`Log::checkpoint`] writes the recovery point
    /// over the old file in place, unsynced — not through a synced temporary file and a
    /// rename — so a power loss can leave the file empty or torn, and the next open refuses
    /// the log as corrupt.
    #[doc(hidden)]
    pub fn plant_checkpoint_in_place(&mut self) {
        self.checkpoint_in_place = true;
    }

    pub(super) fn write_checkpoint_in_place(&mut self) -> Result<(), LogError> {
        write_in_place(self.disk.as_ref(), &self.dir, self.recovery_point)
    }
}

/// `CheckpointInPlace`'s write of `recovery_point` into `dir`'s checkpoint file (a
/// truncation's job writes it so too, `log::cut`).
pub(super) fn write_in_place(disk: &dyn Disk, dir: &Path, recovery_point: i64) -> Result<(), LogError> {
    let path = dir.join(RECOVERY_POINT_FILE);
    let text = format!("{recovery_point}\n");
    let io = |source| LogError::Io { op: "write checkpoint", path: path.clone(), source };
    let file = disk.open(&path, true).map_err(io)?;
    file.truncate(0).map_err(io)?;
    file.write_at(text.as_bytes(), 0).map_err(io)
}
