//! Probes for what one reconcile leaves in linear memory for the next: `plant-<token>` writes a
//! pattern derived from `<token>` into a static of the data segment, a kept heap buffer and a
//! freed one; `recall-<token>` scans the whole linear memory for it. A fresh instance per
//! reconcile must find nothing; a warm instance, which keeps its memory, finds it.

/// How many bytes of the pattern each place holds.
const PLANTED: usize = 4096;

/// Where the scan starts: below it lies only the far end of the guest's stack.
const SCAN_FROM: usize = 1024;

/// A static with a non-zero initial value, so it lives in the data segment's pages, which a
/// fresh instance maps from the plugin's memory image.
static SCRATCH: std::sync::Mutex<[u8; PLANTED]> = std::sync::Mutex::new([1; PLANTED]);

/// One copy of the pattern: the token's bytes, each flipped, so neither the request's name nor
/// the object's JSON contains it.
fn needle(token: &str) -> Vec<u8> {
    token.bytes().map(|b| b ^ 0xa5).collect()
}

fn pattern(needle: &[u8]) -> Vec<u8> {
    needle.iter().copied().cycle().take(PLANTED).collect()
}

/// Leaves the pattern of `token` in the data segment, a kept heap buffer and a freed one.
pub fn plant(token: &str) {
    let pattern = pattern(&needle(token));
    if let Ok(mut scratch) = SCRATCH.lock() {
        scratch.copy_from_slice(&pattern);
    }
    std::mem::forget(pattern.clone());
    drop(pattern);
}

/// Whether two adjacent copies of the pattern of `token` are anywhere in linear memory: this
/// call holds one copy, never two side by side.
pub fn recall(token: &str) -> bool {
    let needle = needle(token);
    let n = needle.len();
    if n == 0 {
        return false;
    }
    memory(SCAN_FROM, memory_end())
        .windows(2 * n)
        .any(|w| w[..n] == needle[..] && w[n..] == needle[..])
}

/// The end of linear memory.
#[cfg(target_arch = "wasm32")]
fn memory_end() -> usize {
    core::arch::wasm32::memory_size::<0>() * 65536
}

/// Built for the host (by `cargo clippy`), there is no linear memory to scan.
#[cfg(not(target_arch = "wasm32"))]
fn memory_end() -> usize {
    SCAN_FROM
}

// Reading all of linear memory is what a plugin author snooping on earlier reconciles does.
#[allow(unsafe_code)]
fn memory(from: usize, to: usize) -> &'static [u8] {
    // SAFETY: `from..to` lies inside the guest's linear memory, which is mapped as long as the
    // instance lives; the scan only reads it.
    unsafe { std::slice::from_raw_parts(from as *const u8, to - from) }
}
