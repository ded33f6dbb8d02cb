//! The shell's side of the IO a decision leaves to it (issue 32's `io_done` contract): each
//! write and sync job, cleaning step, cleaning swap, truncation (with its producer-state
//! rebuild), coordinator's load step, checkpoint sync, replicas' open job and removal runs off the
//! node's disk gate — on the blocking pool in the real build (a small write on the shell's own
//! task), at once and then sleeping the latency the simulated disk owes in the simulated one —
//! and is reported back in a decision of its own (`node::Input::Synced`, `Cleaned`, `Swapped`, `Truncated`, `Loaded`,
//! `CheckpointSynced`, `Opened`, `ProducerIdsPersisted`); a removal's failures only become lines for the operator.

use super::{now_ms, Broker, Input, Shared};
#[cfg(madsim)]
use std::time::Duration;

/// IO a decision left to the shell, run off the node's gate and reported back in a decision.
pub(super) enum Job {
    Sync(crate::log::SyncJob),
    Clean(crate::log::CleanJob),
    Swap(crate::log::SwapJob),
    Truncate(crate::broker::TruncateJob),
    Load(crate::node::LoadJob),
}

impl Shared {
    /// Runs `jobs` one after another, each reported back in a decision of its own, and any
    /// job a report's decision owes in turn (a coordinator's write settled by it): a job taken
    /// is always run and reported, or the log would count it in flight for good.
    pub(super) async fn run_jobs(&self, jobs: Vec<(String, i32, Job)>) {
        let mut jobs = std::collections::VecDeque::from(jobs);
        while let Some((topic, partition, job)) = jobs.pop_front() {
            let input = match job {
                Job::Sync(job) => Input::Synced { topic, partition, stamp: job.stamp, result: self.run_sync(&job).await },
                Job::Clean(job) => Input::Cleaned { topic, partition, done: self.run_clean(job).await },
                Job::Swap(job) => Input::Swapped { topic, partition, done: self.run_swap(job).await },
                Job::Truncate(job) => Input::Truncated { topic, partition, done: self.run_truncation(job).await },
                Job::Load(job) => Input::Loaded { topic, partition, done: self.run_load(job).await },
            };
            // A cleaning step's report changes nothing a reader sees (its swap's report does).
            let wakes = match &input {
                Input::Synced { stamp, .. } => stamp.syncs(),
                // A load step's report changes nothing a waiting request waits for either.
                Input::Cleaned { .. } | Input::Loaded { .. } => false,
                _ => true,
            };
            let done = self.decide(|s| s.node.input(input, now_ms())).await;
            let (more, checkpoint) = self.perform_now(done);
            debug_assert!(checkpoint.is_none(), "only a tick stages a checkpoint");
            jobs.extend(more);
            // A write's report wakes only what it moved (its `Wake`): the request that asked for
            // it looks again anyway once this returns.
            if wakes {
                self.changed();
            }
        }
    }

    /// The rest of a periodic checkpoint the tick began: its other logs staged, a bounded
    /// number a decision (`constants::checkpoint_logs_per_decision`); the file-system sync, off
    /// the disk gate (a `syncfs` after a minute of writes can take long); the commit, bounded
    /// alike; a sync of the renames.
    pub(super) async fn finish_checkpoint(&self, mut staged: crate::broker::StagedCheckpoints) {
        while let Some(after) = staged.resume() {
            let actions = self.decide(|s| s.node.input(Input::CheckpointMore { after }, now_ms())).await;
            let (jobs, more) = self.perform_now(actions);
            self.run_jobs(jobs).await;
            match more {
                Some(more) => staged.extend(more),
                None => break,
            }
        }
        let dir = self.broker().config().data_dir.clone();
        let synced = self.sync_all(&dir).await;
        // A failed sync takes every staged log offline in one decision (no IO); a good one
        // commits them a bounded number at a time (a rename each).
        let parts = match synced {
            Ok(()) => staged.split(crate::constants::checkpoint_logs_per_decision).into_iter().map(|s| (s, Ok(()))).collect(),
            Err(e) => vec![(staged, Err(e))],
        };
        for (staged, result) in parts {
            let actions = self.decide(|s| s.node.input(Input::CheckpointSynced { staged, result }, now_ms())).await;
            let (more, checkpoint) = self.perform_now(actions);
            debug_assert!(checkpoint.is_none(), "only a checkpoint's stage stages one");
            self.run_jobs(more).await;
        }
        if let Err(e) = self.sync_all(&dir).await {
            let _ = self.perform_now(vec![Broker::renames_not_durable(&dir, &e)]);
        }
    }

    /// Starts an open job ([`crate::broker::Action::Open`]) on a task of its own, so the
    /// metadata run, registration or tick whose decision handed it out goes on (opening 200
    /// replicas under writeback takes a second, their creation's `syncfs` seconds), and reports
    /// it back.
    pub(super) fn spawn_open(&self, job: crate::broker::OpenJob) {
        let Some(shared) = self.me.upgrade() else { return };
        tokio::spawn(async move {
            let task = job.clone();
            let done = shared.off_gate("open", crate::buggify::Site::SlowSync, move || task.run(), |why| job.lost(why)).await;
            let actions = shared.decide(|s| s.node.input(Input::Opened(done), now_ms())).await;
            let (more, checkpoint) = shared.perform_now(actions);
            debug_assert!(checkpoint.is_none(), "only a tick stages a checkpoint");
            shared.changed();
            shared.run_jobs(more).await;
        });
    }

    /// Persists the next block of producer ids ([`crate::broker::Action::PersistProducerIds`])
    /// on a task of its own, and reports it back.
    pub(super) fn spawn_producer_ids(&self, block: crate::broker::ProducerIdBlock) {
        let Some(shared) = self.me.upgrade() else { return };
        tokio::spawn(async move {
            let (task, limit) = (block.clone(), block.limit());
            let result = shared.off_gate("producer-id block", crate::buggify::Site::SlowSync, move || task.run(), |why| Err(crate::log::LogError::Failed(why))).await;
            let actions = shared.decide(|s| s.node.input(Input::ProducerIdsPersisted { limit, result }, now_ms())).await;
            let _ = shared.perform_now(actions);
        });
    }

    /// Removes retired replica directories ([`crate::broker::Action::Remove`]) on a task of its
    /// own, off the node's gate; a failure is a line for the operator.
    pub(super) fn spawn_removal(&self, dirs: Vec<std::path::PathBuf>) {
        let Some(shared) = self.me.upgrade() else { return };
        tokio::spawn(async move {
            let disk = shared.disk.clone();
            let remove = move || dirs.iter().filter_map(|d| crate::log::dir::remove_retired(disk.as_ref(), d).err().map(|e| format!("removing a removed replica's directory: {e}"))).collect();
            let failed: Vec<String> = shared.off_gate("removal", crate::buggify::Site::SlowSync, remove, |why| vec![why]).await;
            let _ = shared.perform_now(failed.into_iter().map(|line| crate::broker::Action::Log(crate::broker::Level::Error, line)).collect());
        });
    }

    /// `Disk::sync_all` of `dir` without the disk gate, as [`Shared::run_sync`] runs a job.
    async fn sync_all(&self, dir: &std::path::Path) -> std::io::Result<()> {
        #[cfg(not(madsim))]
        {
            let (disk, dir) = (self.disk.clone(), dir.to_path_buf());
            let ran = tokio::task::spawn_blocking(move || disk.sync_all(&dir)).await;
            ran.unwrap_or_else(|e| Err(std::io::Error::other(format!("the sync task ended without an answer: {e}"))))
        }
        #[cfg(madsim)]
        {
            let result = self.disk.sync_all(dir);
            let stall = self.disk.take_stall();
            if !stall.is_zero() {
                tokio::time::sleep(stall).await;
            }
            result
        }
    }

    /// Runs one sync job without the disk gate. The real build runs it on the blocking pool, so
    /// no runtime worker waits on the fsync; the simulated one does it at once and sleeps the
    /// latency the disk owes for it (and, now and then, a BUGGIFY delay: an fsync that takes
    /// its time), so other decisions of the node go on meanwhile in both.
    async fn run_sync(&self, job: &crate::log::SyncJob) -> Result<(), crate::log::LogError> {
        #[cfg(not(madsim))]
        {
            if !job.syncs() && job.staged_bytes() <= crate::constants::write_inline_bytes_max {
                return job.run();
            }
            let job = job.clone();
            let ran = tokio::task::spawn_blocking(move || job.run()).await;
            ran.unwrap_or_else(|e| Err(crate::log::LogError::Failed(format!("the sync task ended without an answer: {e}"))))
        }
        #[cfg(madsim)]
        {
            let result = job.run();
            let stall = self.disk.take_stall();
            if !stall.is_zero() {
                let late = self.buggify.draw(crate::buggify::Site::SlowSync).map_or(0, |n| 20 + n % 381);
                tokio::time::sleep(stall + Duration::from_millis(late)).await;
            }
            result
        }
    }

    /// Runs a truncation's job (the log's syncs, file cut and checkpoint, then the
    /// producer-state replay) without the disk gate, as [`Shared::run_sync`] runs a sync job.
    async fn run_truncation(&self, job: crate::broker::TruncateJob) -> crate::broker::Truncated {
        let task = job.clone();
        self.off_gate("truncation", crate::buggify::Site::SlowSync, move || task.run(), |why| job.lost(why)).await
    }

    /// Starts a coordinator's load step ([`crate::broker::Action::Load`]) on a task of its own,
    /// so the tick or request whose decision handed it out does not wait for the load; the
    /// report's decision hands out the next step, which starts a task of its own in turn.
    pub(super) fn spawn_load(&self, topic: String, partition: i32, job: crate::node::LoadJob) {
        let Some(shared) = self.me.upgrade() else { return };
        tokio::spawn(async move { shared.run_jobs(vec![(topic, partition, Job::Load(job))]).await });
    }

    /// Reads, checks and decodes a coordinator's load step without the disk gate, as
    /// [`Shared::run_sync`] runs a sync job.
    async fn run_load(&self, job: crate::node::LoadJob) -> crate::node::LoadDone {
        let task = job.clone();
        self.off_gate("load", crate::buggify::Site::SlowSync, move || task.run(), |why| job.lost(why)).await
    }

    /// Runs a cleaning step (its reads and the `.cleaned` file's writes) without the disk
    /// gate, as [`Shared::run_sync`] runs a sync job.
    async fn run_clean(&self, job: crate::log::CleanJob) -> crate::log::Cleaned {
        let task = job.clone();
        self.off_gate("cleaning step", crate::buggify::Site::SlowSwap, move || task.run(), |why| job.lost(why)).await
    }

    /// Reads a ShareFetch's records without the disk gate (`Outcome::ShareRead`,
    /// `Prepared::share_plan`), as [`Shared::run_sync`] runs a sync job; `again` as
    /// [`ShareReadJob::run`](crate::broker::share_read::ShareReadJob::run) takes it.
    pub(super) async fn read_shares(&self, job: crate::broker::share_read::ShareReadJob, again: bool) -> crate::broker::share_read::ShareReads {
        use crate::broker::share_read::ShareReadJob;
        if job.is_empty() {
            return job.run(again);
        }
        // Lost: no reads, and none asked again.
        self.off_gate("share read", crate::buggify::Site::SlowSync, move || job.run(again), |_| ShareReadJob::default().run(true)).await
    }

    /// Runs a cleaning swap without the disk gate, as [`Shared::run_sync`] runs a sync job.
    async fn run_swap(&self, job: crate::log::SwapJob) -> crate::log::Swapped {
        let task = job.clone();
        self.off_gate("swap", crate::buggify::Site::SlowSwap, move || task.run(), |why| job.lost(why)).await
    }

    /// Runs a blocking job (`what`) without the disk gate: on the blocking pool in the real
    /// build (`lost` makes the report of a task that ended without one); in the simulated one
    /// at once (now and then only after a BUGGIFY wait, `LateJob`: a job queued on the pool),
    /// then sleeping the latency the disk owes for it and, now and then, a BUGGIFY delay at
    /// `site` (a job that takes its time).
    async fn off_gate<T: Send + 'static>(&self, what: &str, site: crate::buggify::Site, run: impl FnOnce() -> T + Send + 'static, lost: impl FnOnce(String) -> T) -> T {
        #[cfg(not(madsim))]
        {
            let _ = site;
            let ran = tokio::task::spawn_blocking(run).await;
            ran.unwrap_or_else(|e| lost(format!("the {what} task ended without an answer: {e}")))
        }
        #[cfg(madsim)]
        {
            let _ = (what, lost);
            // BUGGIFY: the job waits its turn on the pool, and its log may be let go meanwhile.
            if let Some(n) = self.buggify.draw(crate::buggify::Site::LateJob) {
                tokio::time::sleep(Duration::from_millis(20 + n % 381)).await;
            }
            let done = run();
            let late = self.buggify.draw(site).map_or(0, |n| 20 + n % 381);
            let stall = self.disk.take_stall() + Duration::from_millis(late);
            if !stall.is_zero() {
                tokio::time::sleep(stall).await;
            }
            done
        }
    }
}
