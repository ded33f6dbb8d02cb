//! The broker binary's global allocator, here so the fuzz targets and the stable test that
//! replays their inputs allocate exactly as the broker does (docs/fuzzing.md).
//!
//! kafka-protocol 0.18 sizes a `Vec` from a request's array count before decoding a single
//! element, so a 19-byte Metadata request claiming 2^31 topics asks for ~150 GB and the failed
//! allocation aborts the process (the fix is still an open upstream PR). No allocation that
//! large is ever real here — requests are at most 100 MiB, responses at most 55 MiB, a
//! decompressed batch at most 64 MiB — so [`LazyHuge`] gives such requests address space only
//! (`mmap` with `MAP_NORESERVE`, no memory is committed): the decode then fails at the end of
//! the request having touched a few pages, and the connection is closed as for any malformed
//! request. Everything smaller goes to the system allocator untouched. (With
//! `vm.overcommit_memory=2` the kernel refuses even that and the old abort returns.)

/// Allocations from this size up get address space only.
pub const lazy_bytes_min: usize = 1 << 30;

/// Page size alignment `mmap` guarantees.
const mmap_align: usize = 4096;

/// See the module header. Install with `#[global_allocator]` in a binary.
pub struct LazyHuge;

fn lazy(layout: std::alloc::Layout) -> bool {
    layout.size() >= lazy_bytes_min && layout.align() <= mmap_align
}

// Every block is either the system allocator's or a fresh anonymous mapping, and which one is
// decided by `lazy(layout)` alone, a pure function of the layout. GlobalAlloc's callers hand
// `dealloc` and `realloc` the layout the block was allocated with (`realloc` gives the block
// the new layout and routes by that). A mapping satisfies its layout: `lazy` admits only sizes
// of 1 GiB and up (never zero) and alignments up to 4096, and `mmap` returns page-aligned
// memory of at least the length asked. Nothing here panics or allocates through itself.
// SAFETY: each block goes back to the allocator that made it, and satisfies its layout.
unsafe impl std::alloc::GlobalAlloc for LazyHuge {
    // SAFETY: the contract is GlobalAlloc::alloc's: the caller gives a layout of non-zero size.
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if !lazy(layout) {
            // SAFETY: the caller's layout, non-zero in size, passed on unchanged.
            return unsafe { std::alloc::System.alloc(layout) };
        }
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
        // A null address hint without MAP_FIXED lets the kernel pick unused address space; the
        // length is the layout's size (at least 1 GiB); fd -1 and offset 0 are what
        // MAP_ANONYMOUS requires. Failure is MAP_FAILED, turned into null below.
        // SAFETY: no existing mapping (no Rust object) can be replaced, and the arguments are valid.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), layout.size(), libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if p == libc::MAP_FAILED { std::ptr::null_mut() } else { p.cast() }
    }

    // SAFETY: the contract is GlobalAlloc::alloc_zeroed's: as `alloc`, a non-zero layout.
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if lazy(layout) {
            // The caller's non-zero layout, passed on; a lazy layout makes `alloc` map
            // anonymous memory, which the kernel zero-fills, so the block is zeroed as promised.
            // SAFETY: as the lines above say.
            unsafe { self.alloc(layout) }
        } else {
            // SAFETY: the caller's non-zero layout, passed on unchanged.
            unsafe { std::alloc::System.alloc_zeroed(layout) }
        }
    }

    // The contract is GlobalAlloc::dealloc's: the caller gives a block this allocator
    // returned for exactly `layout`, and never uses it again.
    // SAFETY: as the lines above say.
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        if lazy(layout) {
            // A lazy layout means `ptr` is the start of a mapping `alloc` made of
            // `layout.size()` bytes, so this unmaps that mapping exactly and nothing else; the
            // caller no longer uses it. (A failure would only leak address space.)
            // SAFETY: as the lines above say.
            unsafe { libc::munmap(ptr.cast(), layout.size()) };
        } else {
            // SAFETY: a layout that is not lazy means `System` allocated `ptr` with this layout.
            unsafe { std::alloc::System.dealloc(ptr, layout) };
        }
    }

    // The contract is GlobalAlloc::realloc's: `ptr` is a live block of this allocator
    // allocated with `layout`; `new_size` is non-zero and, rounded up to `layout.align()`,
    // does not overflow isize. On success the old block is gone; on null it is left untouched.
    // SAFETY: as the lines above say.
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // The alignment is a valid Layout's (a power of two), and the caller guarantees
        // `new_size` rounded up to it does not overflow isize: from_size_align_unchecked's terms.
        // SAFETY: as the lines above say.
        let new_layout = unsafe { std::alloc::Layout::from_size_align_unchecked(new_size, layout.align()) };
        if !lazy(layout) && !lazy(new_layout) {
            // Not lazy, so `System` allocated `ptr` with `layout`; the caller's
            // guarantees on `new_size` are System.realloc's. The result, not lazy either, will
            // be freed by `System` too.
            // SAFETY: as the lines above say.
            return unsafe { std::alloc::System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: `new_layout` has the caller's non-zero `new_size`.
        let fresh = unsafe { self.alloc(new_layout) };
        if !fresh.is_null() {
            // `ptr` is readable for `layout.size()` bytes and `fresh` writable for
            // `new_size`, so for their minimum; they cannot overlap, as `fresh` is a new block
            // allocated while `ptr`'s is still live; bytes need no alignment.
            // SAFETY: as the lines above say.
            unsafe { std::ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size)) };
            // `ptr` came from this allocator with `layout` (the caller's guarantee) and
            // is not used again: the caller gets `fresh` in its place.
            // SAFETY: as the lines above say.
            unsafe { self.dealloc(ptr, layout) };
        }
        fresh
    }
}
