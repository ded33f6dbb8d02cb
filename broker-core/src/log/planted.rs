//! Log defects kept so the simulator can plant them (`broker::PlantedBug`) and prove its
//! checkers catch them. Never called unless a simulated broker plants the bug; nothing here
//! may be used as the log's real behaviour.

use super::{Log, LogError, RECOVERY_POINT_FILE};

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
        let path = self.dir.join(RECOVERY_POINT_FILE);
        let text = format!("{}\n", self.recovery_point);
        let io = |source| LogError::Io { op: "write checkpoint", path: path.clone(), source };
        let file = self.disk.open(&path, true).map_err(io)?;
        file.truncate(0).map_err(io)?;
        file.write_at(text.as_bytes(), 0).map_err(io)
    }
}
