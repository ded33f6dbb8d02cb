//! A follower's append cut short by its disk (an IO error after some of a fetched response's
//! batches are written): what it wrote stays, and it knows the producers of what it wrote.

use super::*;

/// Real files whose `.log` writes fail once `allowed` (when not negative) more have been made:
/// an IO error in the middle of a follower's append of several batches.
struct AppendsRunOut {
    inner: FileDisk,
    allowed: Arc<std::sync::atomic::AtomicI64>,
}

struct AppendsRunOutFile {
    inner: Box<dyn crate::storage::DiskFile>,
    allowed: Option<Arc<std::sync::atomic::AtomicI64>>,
}

impl crate::storage::DiskFile for AppendsRunOutFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        if let Some(allowed) = &self.allowed {
            if allowed.load(SeqCst) == 0 {
                return Err(std::io::Error::other("injected: the disk ran out"));
            }
            let _ = allowed.fetch_update(SeqCst, SeqCst, |n| (n > 0).then(|| n - 1));
        }
        self.inner.write_at(buf, offset)
    }
    fn append(&self, buf: &[u8]) -> std::io::Result<u64> {
        self.inner.append(buf)
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn truncate(&self, len: u64) -> std::io::Result<()> {
        self.inner.truncate(len)
    }
    fn sync(&self) -> std::io::Result<()> {
        self.inner.sync()
    }
}

impl crate::storage::Disk for AppendsRunOut {
    fn open(&self, path: &std::path::Path, create: bool) -> std::io::Result<Box<dyn crate::storage::DiskFile>> {
        let is_log = path.extension().is_some_and(|e| e == "log");
        Ok(Box::new(AppendsRunOutFile { inner: self.inner.open(path, create)?, allowed: is_log.then(|| self.allowed.clone()) }))
    }
    fn exists(&self, path: &std::path::Path) -> bool {
        self.inner.exists(path)
    }
    fn create_dir_all(&self, dir: &std::path::Path) -> std::io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &std::path::Path) -> std::io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &std::path::Path) -> std::io::Result<()> {
        self.inner.remove(path)
    }
    fn remove_dir(&self, dir: &std::path::Path) -> std::io::Result<()> {
        self.inner.remove_dir(dir)
    }
    fn sync_dir(&self, dir: &std::path::Path) -> std::io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn sync_all(&self, dir: &std::path::Path) -> std::io::Result<()> {
        self.inner.sync_all(dir)
    }
}

#[test]
fn a_follower_append_cut_short_knows_the_producers_of_what_it_wrote() {
    use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
    let allowed = Arc::new(AtomicI64::new(-1));
    let run_out = allowed.clone();
    let mut c = Cluster::on_disks(&[1, 2], move |id| match id {
        2 => Arc::new(AppendsRunOut { inner: FileDisk::new(), allowed: run_out.clone() }),
        _ => Arc::new(FileDisk::new()),
    });
    c.create(2);
    assert_eq!(c.round(2), Round::Truncated(0), "broker 2 follows from the start");
    let (now, epoch) = (c.now, c.ctl.image().partition(topic_name, 0).unwrap().leader_epoch);
    let first = super::idempotent(&[b"a"], 7, 0, 0);
    for seq in 0..2 {
        c.broker(1).produce(topic_name, 0, &super::idempotent(&[b"a"], 7, 0, seq), -1, now, &mut Vec::new()).unwrap();
    }
    let who = Fetcher { replica: Some(2), leader_epoch: epoch, log_start_offset: 0, again: false };
    let got = c.broker(1).fetch(topic_name, 0, 0, 1 << 20, true, who, now, &mut Vec::new()).unwrap();
    let records = got.records.to_bytes().unwrap();
    allowed.store(1, SeqCst); // the first batch is written, the second runs out
    let cut_short = c.broker(2).append_from_leader(topic_name, 0, 1, epoch, 0, &records, got.high_watermark, now);
    assert!(cut_short.is_err(), "the second batch failed: {cut_short:?}");
    assert_eq!(c.leo(2), 1, "the first batch is in the log");
    let retry = batch::read_header(&first).unwrap();
    let verdict = c.part(2).producers.check(&retry).unwrap();
    assert!(matches!(verdict, crate::broker::producer::Verdict::Duplicate(_)), "a retry of the written batch is known, should broker 2 lead: {verdict:?}");
}

