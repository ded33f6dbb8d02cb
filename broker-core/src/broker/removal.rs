//! Removing local replicas (a topic deleted, a replica moved away, a stray found at
//! registration) without their unlinks and syncs inside a decision (issue 32). The decision
//! closes the replica (its log's running job ends first, `Broker::forget`), fences an open job
//! out for it, and retires its directory with one rename (`dir::retire`, as Kafka renames a
//! deleted log's directory to `…-delete`): the name is free at once for a replica created again
//! under it. Unlinking the retired directory's files, whose last unlink frees their blocks, is
//! [`Action::Remove`]: the shell does it off the node's gate, and a crash before it is done
//! leaves a stray the next registration removes. Decisions here touch the disk only through
//! that rename and the registration's one listing.

use super::{Action, Broker, Error, Level};
use crate::log::dir;

impl Broker {
    /// Removes this node's replica (an open job out for it is fenced first) and retires its
    /// directory; its files go by the [`Action::Remove`] pushed to `out`.
    pub(super) fn remove_local(&mut self, name: &str, p: i32, out: &mut Vec<Action>) -> Result<(), Error> {
        self.forget(name, p, 0);
        self.cancel_open(name, p);
        self.retire(name, p, out)
    }

    /// Retires the directory of `name`-`p`, if there is one.
    fn retire(&mut self, name: &str, p: i32, out: &mut Vec<Action>) -> Result<(), Error> {
        if let Some(retired) = dir::retire(self.disk.as_ref(), &self.partition_dir(name, p))? {
            out.push(Action::Remove(retired));
        }
        // Its marker, if an open wrote one no sync covered, is gone with it.
        self.creating.remove(&(name.to_string(), p));
        Ok(())
    }

    /// Removes the partition directories this broker holds and the metadata, as of its own
    /// registration, gives it no replica for: a move away from it or a topic deleted while it
    /// was down (Kafka's stray logs), and retired directories whose removal a crash cut short.
    /// A directory of a topic re-created under a new id is kept here and emptied when the
    /// replica opens (`dir::claim`).
    pub(super) fn remove_strays(&mut self, out: &mut Vec<Action>) {
        let me = self.config.node_id;
        let (image, partitions) = (&self.image, &self.partitions);
        let keep = |name: &str, p: i32| {
            let assigned = image.topics.get(name).and_then(|t| t.partitions.get(usize::try_from(p).ok()?)).is_some_and(|part| part.replicas.contains(&me));
            assigned || partitions.contains(name, p) || name == crate::metadata::metadata_topic
        };
        let strays = match dir::strays(self.disk.as_ref(), &self.config.data_dir, keep) {
            Ok(strays) => strays,
            Err(e) => return out.push(Action::Log(Level::Error, format!("looking for stray replicas: {e}"))),
        };
        out.extend(strays.retired.into_iter().map(Action::Remove));
        for (name, p) in strays.replicas {
            self.cancel_open(&name, p);
            match self.retire(&name, p, out) {
                Ok(()) => out.push(Action::Log(Level::Info, format!("{name}-{p}: no replica here in the metadata (moved or deleted while this broker was down); removed"))),
                Err(e) => out.push(Action::Log(Level::Error, format!("{name}-{p}: removing a stray replica: {e}"))),
            }
        }
    }
}
