//! One step of a cleaning pass (`log::pass`), over a read-only [`View`] of the segments it
//! reads: the map walk's reads and key map, the producers' header scan, and the rewrite's
//! reads, judgements and writes (and periodic syncs) of the group's `.cleaned` file (and its
//! removal, when the group is kept as it was), until
//! about `budget` bytes are done or the phase reaches something only the log can do
//! ([`Stop`]). A job runs it off the owner's lock (`log::pass::job`); a log whose owner takes
//! no jobs runs it inline.
//!
//! What it must never do: touch the [`Log`](super::super::Log) — no segment list, no clean
//! point, no swap. Everything it reads is in the view: each segment's shared `.log` handle,
//! size and offset index as they stood when the step was handed out. That stays true while the
//! step runs: the segments it reads are closed (below the dirty end, or a group's), appends only
//! add later ones, a swap never runs beside a step (the pass waits for it), and whatever
//! removes or cuts a segment aborts the pass first, so the step's report is dropped; a handle
//! keeps a removed segment's bytes readable meanwhile.

use super::super::clean::{self, KeyMap, Outcome, Tombstones};
use super::super::batches::Held;
use super::super::read::{batch_ranges, read_across};
use super::super::segment::{walk_headers, Segment};
use super::super::{cleaner, BatchHeader, LogError};
use super::{Pass, Phase};
use crate::constants::{cleaner_sync_bytes, header_read_batch_bytes_min};
use crate::storage::Disk;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

/// Why a step stopped: its budget is spent, or the pass needs the log next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::log) enum Stop {
    /// About `budget` bytes are done; the next step goes on from here.
    Budget,
    /// The map walk ended (the map is full or the dirty end is reached): the producers' scan
    /// starts from the log start.
    Mapped,
    /// The clean part's headers are read: the rewrite starts from the log start.
    Scanned,
    /// No group is being rewritten: the log chooses the next, or ends the pass.
    NeedGroup,
    /// The group is whole in its `.cleaned` file: the log swaps it in.
    GroupWhole,
    /// The pass ends rewriting nothing (nothing mapped, or a segment of the clean part is gone).
    Nothing,
}

/// The closed segments one step may read (see the module header), and where it creates a
/// group's `.cleaned` file.
pub(in crate::log) struct View {
    segments: Vec<Held>,
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    /// `index.interval.bytes`, for the cleaned segment's index.
    interval: u64,
}

impl View {
    pub(super) fn new<'a>(segments: impl Iterator<Item = &'a Segment>, disk: Arc<dyn Disk>, dir: PathBuf, interval: u64) -> View {
        let segments = segments.map(|s| Held::new(s, s.next_offset())).collect();
        View { segments, disk, dir, interval }
    }

    /// Removes the `.cleaned` files of the group at `base`: only its own pass's step may, or
    /// a job that stands for it (`job`), as a later pass makes files of the same names.
    pub(super) fn remove_cleaned(&self, base: i64) -> Result<(), LogError> {
        cleaner::remove_cleaned(self.disk.as_ref(), &self.dir, base)
    }

    /// The index of the segment holding `offset` (or the first, below them all).
    fn holding(&self, offset: i64) -> usize {
        self.segments.partition_point(|s| s.base <= offset).saturating_sub(1)
    }

    /// The whole batches of one read from `at` into `buf`, at most `max_bytes` (at least one
    /// batch), none reaching `upper`, as their headers and where each lies in `buf` (CRCs
    /// checked outside `trusted`, as `Log::read_into` checks them).
    fn batches_into(&self, at: i64, max_bytes: usize, upper: i64, trusted: Range<i64>, buf: &mut Vec<u8>) -> Result<Vec<(BatchHeader, Range<usize>)>, LogError> {
        let first = self.holding(at);
        let (_, len) = read_across(self.segments[first.min(self.segments.len())..].iter().map(Held::reader), at, max_bytes, upper, trusted, buf)?;
        batch_ranges(&buf[..len])
    }

    /// A run of two or more whole batches from `at` (up to `limit`) in one segment that lose
    /// every record by the map's bits, none of them a producer's last batch (those stay apart):
    /// its first and last headers and its bytes, found with two or three header lookups and
    /// without reading the batches between. Epochs only grow along a log, so a run whose ends
    /// share one is of one epoch, as a merged empty batch must be. The bytes are those the map
    /// walk checked. None when there is no such run.
    fn dead_run(&self, at: i64, limit: i64, map: &KeyMap, last_of_producer: &BTreeMap<i64, i64>) -> Result<Option<(BatchHeader, BatchHeader, u64)>, LogError> {
        let Some(held) = self.segments.get(self.holding(at)) else { return Ok(None) };
        let seg = held.reader();
        let kept = last_of_producer.values().filter(|&&b| b >= at).min().copied().unwrap_or(i64::MAX);
        let Some(stop) = map.superseded_through(at, limit.min(held.next).min(kept)) else { return Ok(None) };
        if stop <= at {
            return Ok(None);
        }
        let Some((first_pos, first)) = seg.position_of(at)? else { return Ok(None) };
        let Some((mut last_pos, mut last)) = seg.position_of(stop - 1)? else { return Ok(None) };
        if last.last_offset() >= stop {
            // The batch holding `stop - 1` keeps a record: the run ends before it.
            let Some(before) = seg.position_of(last.base_offset - 1)?.filter(|_| last.base_offset > at) else { return Ok(None) };
            (last_pos, last) = before;
        }
        if first.base_offset != at || last.base_offset <= first.base_offset || last.last_offset() >= stop || last.leader_epoch != first.leader_epoch {
            return Ok(None);
        }
        Ok(Some((first, last, last_pos + last.size as u64 - first_pos)))
    }
}

impl Pass {
    /// Goes on with the pass over `view` for about `budget` bytes (at least one batch), or
    /// until its phase needs the log ([`Stop`]); returns the bytes read and written, and why
    /// it stopped. `now` stamps a new `.cleaned` segment and marker horizons.
    pub(in crate::log) fn step(&mut self, view: &View, now: u64, budget: u64) -> Result<(u64, Stop), LogError> {
        let mut bytes = 0u64;
        while bytes < budget {
            let left = (budget - bytes) as usize;
            match &mut self.phase {
                Phase::Map { next } => {
                    let mut full = false;
                    let batches = if *next < self.end { view.batches_into(*next, left, self.end, 0..0, &mut self.buf)? } else { Vec::new() };
                    for (h, at) in &batches {
                        let b = &self.buf[at.clone()];
                        bytes += b.len() as u64;
                        self.stats.bytes_read += b.len() as u64;
                        // A batch that does not decode keeps all its records: they are simply
                        // not compacted. (Append decoded every batch it took; only one written
                        // before the broker read lz4 and zstd, or damaged under its CRC, can.)
                        // An aborted transaction's records supersede nothing.
                        if !self.aborted.contains(h) && clean::map_batch(&mut self.map, b) == Ok(false) {
                            full = true;
                            break;
                        }
                        if h.producer_id >= 0 {
                            self.producers.insert(h.producer_id, h.base_offset);
                        }
                        self.mapped_batches += 1;
                        *next = h.next_offset();
                    }
                    if full || batches.is_empty() || *next >= self.end {
                        self.map.settle();
                        self.stats.to = *next;
                        self.stats.keys = self.map.len();
                        self.header_reads = self.stats.bytes_read >= self.mapped_batches.max(1) * header_read_batch_bytes_min;
                        let stop = if *next <= self.start { Stop::Nothing } else { Stop::Mapped };
                        return Ok((bytes, stop));
                    }
                }
                Phase::Producers { base, pos, expected, last } => {
                    // The clean part, [log start, pass start), read header by header (the
                    // mapped range's producers are known from the map walk). Segments only
                    // grow between steps (anything that removes one aborts the pass), so the
                    // one at `base` is there; were it not, the pass would end here, rewriting
                    // nothing, rather than rewrite without every producer.
                    if *expected >= self.start {
                        return Ok((bytes, Stop::Scanned));
                    }
                    let i = view.segments.partition_point(|s| s.base < *base);
                    let Some(seg) = view.segments.get(i).filter(|s| s.base == *base) else {
                        return Ok((bytes, Stop::Nothing));
                    };
                    let start = self.start;
                    let (to, next) = walk_headers(seg.file.as_ref(), &seg.path, seg.size, *pos, *expected, left as u64, &mut |h, _| {
                        if h.producer_id >= 0 && h.base_offset < start {
                            last.insert(h.producer_id, h.base_offset);
                        }
                    })?;
                    bytes += to - *pos;
                    (*pos, *expected) = (to, next);
                    if to < seg.size {
                        continue;
                    }
                    match view.segments.get(i + 1) {
                        Some(n) => (*base, *pos, *expected) = (n.base, 0, n.base),
                        None => return Ok((bytes, Stop::Scanned)),
                    }
                }
                Phase::Rewrite { group: None, .. } => return Ok((bytes, Stop::NeedGroup)),
                Phase::Rewrite { tombstones, retention_ms, last_of_producer, held, group: Some(g), .. } => {
                    if g.seg.is_none() {
                        g.seg = Some(cleaner::create_cleaned(view.disk.as_ref(), &view.dir, g.bases[0], view.interval, now)?);
                    }
                    let seg = g.seg.as_mut().expect("created above");
                    let mapped = self.stats.to;
                    // The mapped range was read and checked by the map walk moments ago: see
                    // `Log::read_into` for why its CRCs are not checked again, and `judge` for
                    // the batches that are.
                    let mapped_range = self.start..mapped;
                    // A run of batches that lose everything is passed over unread: its first
                    // and last headers are all the merged empty batch needs.
                    if mapped_range.contains(&g.next) {
                        if let Some((first, last, span)) = view.dead_run(g.next, g.end.min(mapped), &self.map, last_of_producer)? {
                            bytes += span;
                            g.changed = true;
                            g.out.push(&first, &[], Outcome::Empty, false);
                            g.out.push(&last, &[], Outcome::Empty, false);
                            g.next = last.next_offset();
                            continue;
                        }
                    }
                    let batches = if g.next >= g.end {
                        Vec::new()
                    } else if self.header_reads && mapped_range.contains(&g.next) {
                        self.buf.clear();
                        let map = &self.map;
                        let mut header_only = |h: &BatchHeader| !h.is_control() && h.last_offset() < mapped && map.superseded_in(h.base_offset, h.last_offset()) == Some(h.records_count.max(0) as u32);
                        match view.segments.get(view.holding(g.next)) {
                            Some(s) => s.reader().read_sparse(g.next, left, g.end, mapped_range.clone(), &mut self.buf, &mut header_only)?.unwrap_or_default(),
                            None => Vec::new(),
                        }
                    } else {
                        view.batches_into(g.next, left, g.end, mapped_range.clone(), &mut self.buf)?.into_iter().map(|(h, at)| (h, Some(at))).collect()
                    };
                    for (h, at) in &batches {
                        // Counted whole even when only its header was read: a step covers about
                        // `budget` bytes of log either way, and is paced by them.
                        bytes += h.size as u64;
                        let keeps_producer = h.producer_id >= 0 && last_of_producer.get(&h.producer_id) == Some(&h.base_offset);
                        let (b, outcome) = match at {
                            // Something of its transaction stays, or it carries its producer's
                            // state: it stays too (`clean::clean_marker`).
                            Some(at) if h.is_control() => {
                                let b = &self.buf[at.clone()];
                                let kept = held.remove(&h.producer_id) || keeps_producer;
                                (b, clean::clean_marker(b, h, kept, now as i64, *retention_ms))
                            }
                            Some(_) if self.aborted.contains(h) => (&[][..], Outcome::Empty),
                            Some(at) => (&self.buf[at.clone()], judge(&self.buf[at.clone()], h, &self.map, *tombstones, &mapped_range)?),
                            None => (&[][..], Outcome::Empty),
                        };
                        // A batch an earlier pass emptied is no change by itself; merging it is.
                        g.changed |= matches!(outcome, Outcome::Rewritten(_)) || (outcome == Outcome::Empty && h.records_count > 0);
                        if h.is_control() && outcome == Outcome::Empty {
                            g.removed_markers.push(h.base_offset);
                        } else if h.is_transactional() && !h.is_control() && (outcome != Outcome::Empty || keeps_producer) {
                            // A batch of its producer's transaction that stays: so does its marker.
                            held.insert(h.producer_id);
                        }
                        g.out.push(h, b, outcome, keeps_producer);
                        g.next = h.next_offset();
                    }
                    let whole = batches.is_empty() || g.next >= g.end;
                    if whole {
                        g.out.flush_empty();
                    }
                    let written = g.out.drain_into(seg, false)?;
                    (bytes, g.unsynced) = (bytes + written, g.unsynced + written);
                    // Synced as it grows, so the swap's own sync is short.
                    if g.unsynced >= cleaner_sync_bytes as u64 {
                        seg.sync()?;
                        g.unsynced = 0;
                    }
                    if whole {
                        if g.kept_as_is() {
                            // Not swapped in: its file goes here, in the step that made it
                            // (the owner's job with deferral on), so no decision unlinks it.
                            drop(g.seg.take());
                            view.remove_cleaned(g.bases[0])?;
                        }
                        return Ok((bytes, Stop::GroupWhole));
                    }
                }
            }
        }
        Ok((bytes, Stop::Budget))
    }
}

/// What the rewrite makes of a batch. In the mapped range a batch is judged by the map's bits
/// when it has them (see [`KeyMap::superseded_in`]): one that loses every record becomes empty
/// and one that loses none is copied, neither walked nor probed (at 10% live keys nine batches
/// in ten lose everything). Any other is decided record by record ([`clean::clean_batch`]);
/// when it is rewritten with a new CRC its stored one is checked first, even in the mapped
/// range, so bytes damaged since the map walk are never given a valid CRC. A batch that does
/// not decode is kept whole.
fn judge(b: &[u8], h: &BatchHeader, map: &KeyMap, tombstones: Tombstones, mapped: &Range<i64>) -> Result<Outcome, LogError> {
    if mapped.contains(&h.base_offset) && h.last_offset() < mapped.end {
        match map.superseded_in(h.base_offset, h.last_offset()) {
            Some(n) if n as i64 == h.records_count as i64 => return Ok(Outcome::Empty),
            Some(0) => return Ok(Outcome::Whole),
            _ => {}
        }
    }
    let outcome = clean::clean_batch(b, h, map, tombstones).unwrap_or(Outcome::Whole);
    if matches!(outcome, Outcome::Rewritten(_)) && mapped.contains(&h.base_offset) {
        crate::log::batch::check_stored(b)?;
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{build_keyed, read_header, stamp};
    use crate::log::clean::Keep;

    #[test]
    fn the_rewrite_judges_mapped_batches_by_their_bits_and_checks_those_it_rewrites() {
        // Offsets 0..6 in three batches: a a | a b | b c. Only a@2, b@4 and c@5 are latest.
        let batches: Vec<(Vec<u8>, BatchHeader)> = [(0, ["a", "a"]), (2, ["a", "b"]), (4, ["b", "c"])]
            .into_iter()
            .map(|(base, keys)| {
                let mut b = build_keyed(&keys.map(|k| (Some(k.as_bytes()), Some(&b"value"[..]))), 1_000);
                stamp(&mut b, base, 1);
                let h = read_header(&b).unwrap();
                (b, h)
            })
            .collect();
        let mut map = KeyMap::for_range(1 << 20, Keep::Latest, 0, 6);
        for (b, _) in &batches {
            assert_eq!(clean::map_batch(&mut map, b), Ok(true));
        }
        map.settle();
        let none = Tombstones { reached: 0, horizon_ms: 0 };
        let judged: Vec<Outcome> = batches.iter().map(|(b, h)| judge(b, h, &map, none, &(0..6)).unwrap()).collect();
        assert_eq!(judged[0], Outcome::Empty);
        assert!(matches!(judged[1], Outcome::Rewritten(_)), "a@2 stays, b@3 goes");
        assert_eq!(judged[2], Outcome::Whole);
        // The same verdicts as record by record.
        for ((b, h), j) in batches.iter().zip(&judged) {
            assert_eq!(&clean::clean_batch(b, h, &map, none).unwrap(), j);
        }
        // Bytes damaged since the map walk: a batch copied whole keeps its stored CRC (so the
        // damage stays visible), but one to be rewritten with a new CRC is refused.
        let (mut damaged, h) = batches[1].clone();
        let value = damaged.windows(5).rposition(|w| w == b"value").unwrap();
        damaged[value] ^= 0x20;
        assert!(judge(&damaged, &h, &map, none, &(0..6)).is_err(), "a new CRC over damaged bytes");
        assert!(judge(&damaged, &h, &map, none, &(0..0)).is_ok(), "outside the mapped range the read checked it");
    }
}
