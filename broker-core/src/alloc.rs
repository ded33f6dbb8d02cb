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

unsafe impl std::alloc::GlobalAlloc for LazyHuge {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if !lazy(layout) {
            return unsafe { std::alloc::System.alloc(layout) };
        }
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
        let p = unsafe { libc::mmap(std::ptr::null_mut(), layout.size(), libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if p == libc::MAP_FAILED { std::ptr::null_mut() } else { p.cast() }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if lazy(layout) {
            unsafe { self.alloc(layout) } // anonymous mappings are zero-filled
        } else {
            unsafe { std::alloc::System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        if lazy(layout) {
            unsafe { libc::munmap(ptr.cast(), layout.size()) };
        } else {
            unsafe { std::alloc::System.dealloc(ptr, layout) };
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let new_layout = unsafe { std::alloc::Layout::from_size_align_unchecked(new_size, layout.align()) };
        if !lazy(layout) && !lazy(new_layout) {
            return unsafe { std::alloc::System.realloc(ptr, layout, new_size) };
        }
        let fresh = unsafe { self.alloc(new_layout) };
        if !fresh.is_null() {
            unsafe { std::ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size)) };
            unsafe { self.dealloc(ptr, layout) };
        }
        fresh
    }
}
