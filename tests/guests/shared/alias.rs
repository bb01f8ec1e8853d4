//! Strings that alias one guest buffer, for guests that hand the host many strings over the same
//! bytes (a host that copies each one copies terabytes; a correct host refuses cheaply).
//!
//! A [`Pinned`] buffer is leaked and registered with this module's global allocator, which from
//! then on ignores every free inside it. That is what makes aliasing sound against wit-bindgen: an
//! export's post-return frees each string it returned, once per string, so a list of a million
//! aliases of one buffer would otherwise free it a million times. Imports borrow their arguments
//! and free nothing, but callers still `std::mem::forget` their aliases instead of dropping them.
//!
//! Included with `#[path]` by each guest that needs it, so each cdylib has one global allocator.
//! Unsafe code is the point of this module (a global allocator, `String::from_raw_parts`): the
//! including crate allows `unsafe_code` on the `mod` item only.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many buffers can be pinned per instance.
const SLOTS: usize = 4;

/// First byte of each pinned buffer; 0 for a free slot.
static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// One past the last byte of each pinned buffer.
static ENDS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

/// The system allocator, except that frees inside a pinned buffer do nothing.
struct PinningAllocator;

#[global_allocator]
static ALLOCATOR: PinningAllocator = PinningAllocator;

fn is_pinned(ptr: *mut u8) -> bool {
    let addr = ptr as usize;
    STARTS.iter().zip(&ENDS).any(|(start, end)| {
        let start = start.load(Ordering::Acquire);
        start != 0 && (start..end.load(Ordering::Acquire)).contains(&addr)
    })
}

// SAFETY: every allocation comes from `System`; the only change is that blocks inside a pinned
// buffer are never handed back to it, which leaks them and nothing more.
unsafe impl GlobalAlloc for PinningAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !is_pinned(ptr) {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !is_pinned(ptr) {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // A pinned block moves out by copy and stays where it is for its other aliases.
        // SAFETY: the caller guarantees `new_size` is valid for `layout.align()`; the copy stays
        // within both blocks.
        unsafe {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            let new = System.alloc(new_layout);
            if !new.is_null() {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            }
            new
        }
    }
}

/// A leaked buffer of ASCII bytes that no free releases; [`Pinned::alias`] makes strings over it.
#[derive(Clone, Copy, Debug)]
pub struct Pinned {
    addr: usize,
    len: usize,
}

impl Pinned {
    /// Leaks a buffer of `len` copies of the ASCII byte `byte` (`len` > 0) and pins it.
    ///
    /// # Panics
    ///
    /// When `byte` is not ASCII, `len` is 0, or every slot is taken.
    pub fn new(len: usize, byte: u8) -> Self {
        assert!(
            byte.is_ascii() && len > 0,
            "a pinned buffer holds ASCII bytes"
        );
        let bytes: &'static mut [u8] = Box::leak(vec![byte; len].into_boxed_slice());
        let addr = bytes.as_mut_ptr() as usize;
        let slot = STARTS
            .iter()
            .position(|start| {
                start
                    .compare_exchange(0, addr, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            })
            .expect("a free slot for a pinned buffer");
        ENDS[slot].store(addr + len, Ordering::Release);
        Self { addr, len }
    }

    /// A `String` over the whole buffer, sharing it with every other alias.
    ///
    /// # Safety
    ///
    /// Nothing may write through the returned string (no `as_mut_vec`, `as_bytes_mut` or
    /// in-place edits): every alias sees the same bytes. Growing it is fine (the allocator copies
    /// a pinned block out), and dropping it frees nothing.
    pub unsafe fn alias(self) -> String {
        // SAFETY: the buffer is one allocation of exactly `len` bytes (so capacity = length, and
        // a lowering's `into_boxed_slice` does not reallocate) of ASCII, hence UTF-8; it is never
        // freed, so every alias stays valid; the caller promises not to write through it.
        unsafe { String::from_raw_parts(self.addr as *mut u8, self.len, self.len) }
    }
}
