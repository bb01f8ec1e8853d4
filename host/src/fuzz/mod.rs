//! Fuzz targets for every parser of guest, apiserver and operator input, and their harness.
//!
//! Each target (the files below group them by parser) is a proptest strategy of hostile inputs
//! and a check of one parse: the parse must not panic, must finish within [`SLOW`] (past
//! [`HUNG`] a watchdog aborts the test process, naming the target and seed), must hold at most
//! [`ALLOCATION_PER_BYTE`] bytes per input byte plus [`ALLOCATION_SLACK`] at its peak, and what it
//! accepts must satisfy the invariant its module promises. proptest's engine is random, not coverage-guided, and runs on
//! stable as plain tests.
//!
//! Each target runs for `WASMOP_FUZZ_SECONDS` seconds (a quarter of a second when unset, so
//! `cargo test` stays quick; `make fuzz` runs longer), from a seed it prints with its figures and
//! takes from `WASMOP_FUZZ_SEED` when set, so a failure reproduces. A failing input is shrunk and
//! printed; keep it as a regression test in the parser's own tests.
//!
//! Test-only; imports whatever it fuzzes.

mod boundary;
mod cache;
mod config;
mod registration;
mod request_info;
mod selector;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// How long each target runs when `WASMOP_FUZZ_SECONDS` is unset.
const DEFAULT_BUDGET: Duration = Duration::from_millis(250);
/// Inputs per proptest run; the budget is checked between runs.
const BATCH: u32 = 32;
/// The longest one parse may take (a debug build on a busy machine, with a wide margin).
const SLOW: Duration = Duration::from_secs(5);
/// How long one input may run before the watchdog aborts the process: a parse that loops.
const HUNG: Duration = Duration::from_secs(60);
/// The most bytes a parse may hold at once per byte of input: serde_json's `Value` of `[0,0,…]`
/// holds 16 bytes per input byte, and up to three times that while a vector grows.
const ALLOCATION_PER_BYTE: usize = 64;
/// The bytes a parse may hold at once whatever its input's size.
const ALLOCATION_SLACK: usize = 256 << 10;
/// The longest error message a parser may return: it names the bad part, cut, not all of it.
const MAX_ERROR: usize = 512;

/// Runs `check` on inputs from `strategy` for the target's budget, panicking with the shrunk
/// failing input and the seed that reproduces it.
fn fuzz<S: Strategy>(
    target: &'static str,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let budget = budget();
    let seed = seed(target);
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed));
    let mut seeds = TestRunner::new_with_rng(Config::default(), rng);
    let config = Config {
        cases: BATCH,
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..Config::default()
    };
    let started = Instant::now();
    let mut inputs = 0u64;
    while inputs == 0 || started.elapsed() < budget {
        let mut runner = TestRunner::new_with_rng(config.clone(), seeds.new_rng());
        let result = runner.run(&strategy, |input| {
            let _watched = Watched::start(target, seed);
            check(input)
        });
        if let Err(error) = result {
            panic!("fuzz target `{target}` failed (WASMOP_FUZZ_SEED={seed}): {error}");
        }
        inputs += u64::from(BATCH);
    }
    eprintln!(
        "fuzz {target}: {inputs} inputs in {:.1?} (WASMOP_FUZZ_SEED={seed})",
        started.elapsed()
    );
}

/// Runs one parse of an input of `len` bytes, failing the case when it held more than its
/// allocation bound at once or took longer than [`SLOW`]; a panic in it is resumed as the case's.
fn parse<T>(len: usize, parse: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    let started = Instant::now();
    let mut outcome = None;
    let held = allocation_counter::measure(|| {
        outcome = Some(panic::catch_unwind(AssertUnwindSafe(parse)));
    });
    let took = started.elapsed();
    let value = match outcome {
        Some(Ok(value)) => value,
        Some(Err(panic)) => panic::resume_unwind(panic),
        None => unreachable!("measure runs its closure"),
    };
    let bound = ALLOCATION_SLACK + ALLOCATION_PER_BYTE * len;
    prop_assert!(
        held.bytes_max <= bound as u64,
        "held {} bytes at once for {len} bytes of input, over the bound of {bound}",
        held.bytes_max
    );
    prop_assert!(took <= SLOW, "took {took:?} for {len} bytes of input");
    Ok(value)
}

/// Fails the case when an error message is longer than [`MAX_ERROR`].
fn short_error(message: &str) -> Result<(), TestCaseError> {
    error_within(message, MAX_ERROR)
}

/// Fails the case when an error message is longer than `max` bytes.
fn error_within(message: &str, max: usize) -> Result<(), TestCaseError> {
    prop_assert!(
        message.len() <= max,
        "a {}-byte error message: {:?}…",
        message.len(),
        wasmop_contract::boundary::cut(message)
    );
    Ok(())
}

// === inputs ===

/// Strings a hostile guest or object author would try: near-valid names, path and selector
/// punctuation, arbitrary Unicode, long runs, and the classic tricks.
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9.-]{0,70}",
        3 => "[a-zA-Z0-9./%?#:=!(),\\\\ \t_*<>`\"{}|^-]{0,40}",
        2 => any::<String>(),
        1 => ("[a-z./%=,-]{1,4}", 1..600usize).prop_map(|(unit, n)| unit.repeat(n)),
        1 => prop::sample::select(TRICKS).prop_map(str::to_owned),
    ]
}

/// `text`, and now and then the same text cut short or with hostile text put in.
fn mangled(text: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    (text, 0..6u8, any::<prop::sample::Index>(), hostile_text()).prop_map(
        |(text, how, at, insert)| {
            let at = (0..=at.index(text.len() + 1))
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            match how {
                0 => text[..at].to_owned(),
                1 => format!("{}{insert}{}", &text[..at], &text[at..]),
                _ => text,
            }
        },
    )
}

/// Strings that have broken parsers before.
const TRICKS: &[&str] = &[
    "",
    ".",
    "..",
    "../x",
    "./",
    "%2e%2e",
    "%2F",
    "a/b",
    "x?dryRun=All",
    "x#frag",
    "a\\b",
    "core",
    "*",
    "-",
    "a-",
    "-a",
    "\0",
    "é",
    "\u{202e}",
    "a\nb",
    " ",
    "=",
    "!",
    "(",
    ")",
    ",",
];

// === harness ===

/// The per-target budget: `WASMOP_FUZZ_SECONDS`, or [`DEFAULT_BUDGET`].
fn budget() -> Duration {
    match std::env::var("WASMOP_FUZZ_SECONDS") {
        Ok(seconds) => Duration::from_secs_f64(
            seconds
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .unwrap_or_else(|| panic!("WASMOP_FUZZ_SECONDS={seconds:?} is not seconds")),
        ),
        Err(_) => DEFAULT_BUDGET,
    }
}

/// The target's seed: `WASMOP_FUZZ_SEED` when set, a fresh one otherwise.
fn seed(target: &str) -> u64 {
    if let Ok(seed) = std::env::var("WASMOP_FUZZ_SEED") {
        return seed
            .parse()
            .unwrap_or_else(|_| panic!("WASMOP_FUZZ_SEED={seed:?} is not a number"));
    }
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write(target.as_bytes());
    hasher.finish()
}

/// A ChaCha seed of 32 bytes from `seed`.
fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut bytes = [0; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&seed.to_le_bytes());
    }
    bytes
}

/// The inputs running now, by target: when each started, and the seed.
static RUNNING: Mutex<Option<HashMap<&'static str, (Instant, u64)>>> = Mutex::new(None);

/// One input running under the watchdog, until dropped (a panic included).
struct Watched(&'static str);

impl Watched {
    fn start(target: &'static str, seed: u64) -> Self {
        static WATCHDOG: Once = Once::new();
        WATCHDOG.call_once(|| {
            std::thread::spawn(watchdog);
        });
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        running
            .get_or_insert_default()
            .insert(target, (Instant::now(), seed));
        Watched(target)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        running.get_or_insert_default().remove(self.0);
    }
}

/// Aborts the process when an input has run past [`HUNG`]: a loop cannot be unwound.
fn watchdog() {
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        let hung = running
            .iter()
            .flatten()
            .find(|(_, (since, _))| since.elapsed() > HUNG);
        if let Some((target, (_, seed))) = hung {
            eprintln!(
                "fuzz target `{target}` ran one input for over {HUNG:?}: a loop \
                 (reproduce with WASMOP_FUZZ_SEED={seed})"
            );
            std::process::abort();
        }
    }
}
