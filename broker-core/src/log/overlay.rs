//! Bytes appended to a segment but not yet written to its file: the write-behind of a broker's
//! logs (`log::deferred`). An append stages its batch here, inside the decision, and the owner's
//! next job writes the staged bytes to the file off the node's lock (`SegmentLog::write_out`),
//! so a write the kernel throttles stops only what waits for that partition.
//!
//! What holds:
//! * the staged chunks are contiguous and follow the file's bytes: everything below the first
//!   chunk's position is in the file (a chunk leaves only after its write succeeded), so a read
//!   takes the file below that position and the chunks from there on, and sees every appended
//!   byte whether or not it was written yet;
//! * a cut drops the chunks past its length (the part of one it splits, too) before the file is
//!   cut, and never while a write is under way (`SegmentLog::cut` waits for it);
//! * nothing here does IO: the owner of the chunks (`SegmentLog`) does.

use bytes::Bytes;
use std::collections::VecDeque;

/// One append's bytes (whole batches), at `position` of the segment file.
#[derive(Debug, Clone)]
pub(super) struct Chunk {
    pub position: u64,
    pub bytes: Bytes,
}

impl Chunk {
    fn end(&self) -> u64 {
        self.position + self.bytes.len() as u64
    }
}

/// The staged chunks of one segment, in file order.
#[derive(Debug, Default)]
pub(super) struct Overlay {
    chunks: VecDeque<Chunk>,
}

impl Overlay {
    /// Stages `bytes` at `position`, which must be where the file and the chunks end.
    pub(super) fn push(&mut self, chunk: Chunk) {
        debug_assert!(self.end().is_none_or(|e| e == chunk.position), "staged chunks are contiguous");
        if !chunk.bytes.is_empty() {
            self.chunks.push_back(chunk);
        }
    }

    /// Where the staged bytes begin: below it the file holds every byte.
    pub(super) fn start(&self) -> Option<u64> {
        self.chunks.front().map(|c| c.position)
    }

    /// Where the staged bytes end.
    pub(super) fn end(&self) -> Option<u64> {
        self.chunks.back().map(Chunk::end)
    }

    pub(super) fn bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.bytes.len() as u64).sum()
    }

    /// The chunks to write, without taking them out: a read meanwhile still finds them here.
    pub(super) fn snapshot(&self) -> Vec<Chunk> {
        self.chunks.iter().cloned().collect()
    }

    /// The first `n` chunks are in the file now.
    pub(super) fn written(&mut self, n: usize) {
        self.chunks.drain(..n.min(self.chunks.len()));
    }

    /// Drops every staged byte at or past `len`.
    pub(super) fn cut(&mut self, len: u64) {
        while self.chunks.back().is_some_and(|c| c.position >= len) {
            self.chunks.pop_back();
        }
        if let Some(last) = self.chunks.back_mut().filter(|c| c.end() > len) {
            last.bytes = last.bytes.slice(..(len - last.position) as usize);
        }
    }

    /// Copies the staged bytes that fall in `offset..offset + buf.len()` to their places in
    /// `buf`; returns where the chunks start and end (None: nothing staged, the file has all).
    pub(super) fn copy_into(&self, buf: &mut [u8], offset: u64) -> Option<(u64, u64)> {
        let (start, end) = (self.start()?, self.end()?);
        let want_end = offset + buf.len() as u64;
        for c in self.chunks.iter().filter(|c| c.end() > offset && c.position < want_end) {
            let from = c.position.max(offset);
            let to = c.end().min(want_end);
            let src = &c.bytes[(from - c.position) as usize..(to - c.position) as usize];
            buf[(from - offset) as usize..(to - offset) as usize].copy_from_slice(src);
        }
        Some((start, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staged() -> Overlay {
        let mut o = Overlay::default();
        o.push(Chunk { position: 10, bytes: Bytes::from_static(b"abcde") });
        o.push(Chunk { position: 15, bytes: Bytes::from_static(b"fgh") });
        o
    }

    #[test]
    fn copies_what_falls_in_the_range_and_says_where_the_chunks_lie() {
        let o = staged();
        let mut buf = [0u8; 6];
        assert_eq!(o.copy_into(&mut buf, 8), Some((10, 18)));
        assert_eq!(&buf, b"\0\0abcd");
        let mut buf = [0u8; 4];
        o.copy_into(&mut buf, 13);
        assert_eq!(&buf, b"defg");
        assert_eq!(Overlay::default().copy_into(&mut buf, 0), None);
    }

    #[test]
    fn a_cut_drops_and_splits_chunks_and_written_ones_leave() {
        let mut o = staged();
        o.cut(16);
        assert_eq!((o.end(), o.bytes()), (Some(16), 6));
        o.cut(12);
        assert_eq!((o.start(), o.end()), (Some(10), Some(12)));
        o.written(1);
        assert_eq!((o.start(), o.end()), (None, None));
    }
}
