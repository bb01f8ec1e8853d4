//! Build-time pre-initialisation of a reactor core module, with Wizer: its `_initialize` (a Go
//! program's runtime start and package `init`s), then the init function the build names, run
//! once, here, and the memory and globals they leave become the module's data. Every instance of
//! the plugin then starts initialised, and the host maps that data copy-on-write, so instances
//! share it.
//!
//! The initialisation gets WASI preview1 with nothing but its program name: no environment, no
//! files, no network; stdout and stderr go to the build's stderr. Any other import traps, so a
//! plugin that calls the host while initialising is refused, naming the import. It runs within
//! [`BOUNDS`]: one that never ends or grows without end is stopped.
//!
//! Invariants: the snapshot exports neither `_initialize` nor the init function, so nothing runs
//! the initialisation again; what it drew from `random_get` while initialising (Go's map hash
//! seeds) is the build's, the same in every instance.

use wasm_encoder::{ConstExpr, DataSection, RawSection};
use wasmparser::{DataKind, Operator, Parser, Payload};
use wasmtime::{Config, Engine, Linker, Module, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::{self, WasiP1Ctx};
use wasmtime_wizer::{InstanceState, SnapshotVal, ValType, Wizer};

/// What an initialisation may spend: fuel (about one unit per instruction; a controller-runtime
/// plugin's takes 1.3e8) and the linear memory it may grow to.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    fuel: u64,
    memory: usize,
}

/// The bounds of every build's initialisation: seconds of work, and 1 GiB.
const BOUNDS: Bounds = Bounds {
    fuel: 10_000_000_000,
    memory: 1 << 30,
};

/// A reactor's initialisation, run before the init function.
const REACTOR: &str = "_initialize";

/// Segments of a module's data nearer than this are merged, zeros between them included.
const GAP: usize = 4096;

/// Why a module could not be pre-initialised.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The module is not one Wizer can snapshot (for example, data it cannot place).
    #[error("cannot be pre-initialised: {0}")]
    Unsupported(String),
    /// Its initialisation did not finish within its fuel.
    #[error("its initialisation did not finish within {0} instructions")]
    Endless(u64),
    /// Its initialisation trapped, ran out of memory, or called an import it may not.
    #[error("its initialisation failed: {0:#}")]
    Init(wasmtime::Error),
}

/// The pre-initialised `wasm`: its `_initialize`, if it exports one, then its export `init`,
/// run with `program` as the only argument.
pub fn snapshot(wasm: &[u8], program: &str, init: &str) -> Result<Vec<u8>, SnapshotError> {
    snapshot_within(wasm, program, init, BOUNDS)
}

/// [`snapshot`] within `bounds`.
fn snapshot_within(
    wasm: &[u8],
    program: &str,
    init: &str,
    bounds: Bounds,
) -> Result<Vec<u8>, SnapshotError> {
    let wasm = merge_data(wasm)?;
    let mut wizer = Wizer::new();
    wizer.init_func(init);
    let (cx, instrumented) = wizer
        .instrument(&wasm)
        .map_err(|e| SnapshotError::Unsupported(format!("{e:#}")))?;
    let mut config = Config::new();
    config
        .consume_fuel(true)
        .strategy(wasmtime::Strategy::Winch);
    let engine = Engine::new(&config).map_err(SnapshotError::Init)?;
    let mut store = Store::new(&engine, Init::new(program, bounds.memory));
    store.limiter(|init| &mut init.limits);
    store.set_fuel(bounds.fuel).map_err(SnapshotError::Init)?;
    let instance = initialise(&mut store, &instrumented, init).map_err(|e| match e
        .downcast_ref::<wasmtime::Trap>()
    {
        Some(wasmtime::Trap::OutOfFuel) => SnapshotError::Endless(bounds.fuel),
        _ => SnapshotError::Init(e),
    })?;
    let mut state = Snapshotted { store, instance };
    futures::executor::block_on(wizer.snapshot(&cx, &mut state))
        .map_err(|e| SnapshotError::Unsupported(format!("{e:#}")))
}

/// What the initialisation's store holds: its WASI and its memory bound.
struct Init {
    wasi: WasiP1Ctx,
    limits: StoreLimits,
}

impl Init {
    fn new(program: &str, memory: usize) -> Self {
        let wasi = WasiCtxBuilder::new()
            .args(&[program])
            .stdout(std::io::stderr())
            .stderr(std::io::stderr())
            .build_p1();
        let limits = StoreLimitsBuilder::new()
            .memory_size(memory)
            .trap_on_grow_failure(true)
            .build();
        Init { wasi, limits }
    }
}

/// Instantiates the instrumented module and runs its `_initialize`, then `init`.
fn initialise(
    store: &mut Store<Init>,
    wasm: &[u8],
    init: &str,
) -> wasmtime::Result<wasmtime::Instance> {
    let module = Module::new(store.engine(), wasm)?;
    let mut linker = Linker::new(store.engine());
    p1::add_to_linker_sync(&mut linker, |init: &mut Init| &mut init.wasi)?;
    linker.define_unknown_imports_as_traps(&module)?;
    let instance = linker.instantiate(&mut *store, &module)?;
    if init != REACTOR && instance.get_func(&mut *store, REACTOR).is_some() {
        let reactor = instance.get_typed_func::<(), ()>(&mut *store, REACTOR)?;
        reactor.call(&mut *store, ())?;
    }
    let init = instance.get_typed_func::<(), ()>(&mut *store, init)?;
    init.call(&mut *store, ())?;
    Ok(instance)
}

/// The initialised instance, as Wizer reads it.
struct Snapshotted {
    store: Store<Init>,
    instance: wasmtime::Instance,
}

impl InstanceState for Snapshotted {
    async fn global_get(&mut self, name: &str, _: ValType) -> SnapshotVal {
        let global = self.instance.get_global(&mut self.store, name);
        match global.map(|global| global.get(&mut self.store)) {
            Some(wasmtime::Val::I32(x)) => SnapshotVal::I32(x),
            Some(wasmtime::Val::I64(x)) => SnapshotVal::I64(x),
            Some(wasmtime::Val::F32(x)) => SnapshotVal::F32(x),
            Some(wasmtime::Val::F64(x)) => SnapshotVal::F64(x),
            Some(wasmtime::Val::V128(x)) => SnapshotVal::V128(x.as_u128()),
            _ => panic!("Wizer asked for {name}, which its instrumentation exports as a number"),
        }
    }

    async fn memory_contents(&mut self, name: &str, contents: impl FnOnce(&[u8]) + Send) {
        let memory = self.instance.get_memory(&mut self.store, name);
        let memory = memory.expect("Wizer asks for the memories its instrumentation exports");
        contents(memory.data(&self.store))
    }
}

/// `wasm` with its active data segments merged where they lie within [`GAP`] of each other: Go
/// writes its data as the engine's most segments, which a module instrumented for a snapshot
/// may not have.
fn merge_data(wasm: &[u8]) -> Result<Vec<u8>, SnapshotError> {
    let unsupported = |what: &str| SnapshotError::Unsupported(what.to_owned());
    let parse = |e: wasmparser::BinaryReaderError| SnapshotError::Unsupported(e.to_string());
    let mut sections = Vec::new();
    let mut segments = Vec::new();
    let mut data_at = None;
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(parse)? {
            Payload::DataSection(reader) => {
                for data in reader {
                    let data = data.map_err(parse)?;
                    let DataKind::Active {
                        memory_index: 0,
                        offset_expr,
                    } = data.kind
                    else {
                        return Err(unsupported("a data segment that is not active in memory 0"));
                    };
                    let Ok(Operator::I32Const { value }) =
                        offset_expr.get_operators_reader().read()
                    else {
                        return Err(unsupported("a data segment whose offset is not a constant"));
                    };
                    segments.push((value as u32 as usize, data.data.to_vec()));
                }
                data_at = Some(sections.len());
                sections.push((0, &[][..]));
            }
            Payload::DataCountSection { .. } => {}
            payload => {
                if let Some((id, range)) = payload.as_section() {
                    sections.push((id, &wasm[range]));
                }
            }
        }
    }
    let mut module = wasm_encoder::Module::new();
    for (at, (id, data)) in sections.iter().enumerate() {
        match Some(at) == data_at {
            true => module.section(&data_section(coalesce(std::mem::take(&mut segments)))),
            false => module.section(&RawSection { id: *id, data }),
        };
    }
    Ok(module.finish())
}

/// `segments` (offset, bytes) sorted and joined where the gap between two is at most [`GAP`].
fn coalesce(mut segments: Vec<(usize, Vec<u8>)>) -> Vec<(usize, Vec<u8>)> {
    segments.sort_by_key(|(offset, _)| *offset);
    let mut merged: Vec<(usize, Vec<u8>)> = Vec::new();
    for (offset, bytes) in segments {
        match merged.last_mut() {
            Some((start, data))
                if (*start + data.len()..=*start + data.len() + GAP).contains(&offset) =>
            {
                data.resize(offset - *start, 0);
                data.extend_from_slice(&bytes);
            }
            _ => merged.push((offset, bytes)),
        }
    }
    merged
}

/// A data section of `segments`, active in memory 0.
fn data_section(segments: Vec<(usize, Vec<u8>)>) -> DataSection {
    let mut section = DataSection::new();
    for (offset, bytes) in segments {
        section.active(0, &ConstExpr::i32_const(offset as i32), bytes);
    }
    section
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reactor whose initialisation runs `init`, whose `finish` doubles its global, and whose
    /// `read` returns what they left: its global plus the number at address 64. It imports WASI's `args_sizes_get` and the host's
    /// `cache.get`.
    fn reactor(init: &str) -> Vec<u8> {
        wat::parse_str(format!(
            r#"(module
                (import "wasi_snapshot_preview1" "args_sizes_get" (func $args (param i32 i32) (result i32)))
                (import "wasmop:reconciler/cache@0.1.3" "get" (func $get))
                (memory (export "memory") 1)
                (global $g (mut i32) (i32.const 0))
                (data (i32.const 128) "a")
                (data (i32.const 132) "b")
                (func (export "_initialize") {init})
                (func (export "finish") (global.set $g (i32.mul (global.get $g) (i32.const 2))))
                (func (export "read") (result i32)
                    (i32.add (global.get $g) (i32.load (i32.const 64)))))"#
        ))
        .expect("the test's module parses")
    }

    /// Calls `read` of a fresh instance of `wasm`, which must need no imports after all, and
    /// says whether it still exports `_initialize` or `init`.
    fn read(wasm: &[u8], init: &str) -> (i32, bool) {
        let engine = Engine::default();
        let module = Module::new(&engine, wasm).expect("the snapshot compiles");
        let mut linker = Linker::<()>::new(&engine);
        linker.define_unknown_imports_as_traps(&module).unwrap();
        let mut store = Store::new(&engine, ());
        let instance = linker.instantiate(&mut store, &module).unwrap();
        let read = instance
            .get_typed_func::<(), i32>(&mut store, "read")
            .unwrap();
        let initialise = [REACTOR, init]
            .iter()
            .any(|name| instance.get_export(&mut store, name).is_some());
        (read.call(&mut store, ()).unwrap(), initialise)
    }

    #[test]
    fn the_initialised_state_is_the_module_s_and_the_initialisation_is_gone() {
        let init = "(global.set $g (i32.const 40)) (i32.store (i32.const 64) (i32.const 2))";
        let snapshot = snapshot(&reactor(init), "plugin", REACTOR).unwrap();
        assert_eq!(read(&snapshot, REACTOR), (42, false));
        let original = read(&reactor(init), REACTOR);
        assert_eq!(original, (0, true), "the original starts uninitialised");
    }

    #[test]
    fn the_init_function_runs_after_the_reactor_s_initialisation() {
        let init = "(global.set $g (i32.const 20)) (i32.store (i32.const 64) (i32.const 2))";
        let snapshot = snapshot(&reactor(init), "plugin", "finish").unwrap();
        assert_eq!(read(&snapshot, "finish"), (42, false));
    }

    #[test]
    fn the_initialisation_gets_its_program_name_as_its_only_argument() {
        let init = "(drop (call $args (i32.const 0) (i32.const 4))) \
                    (i32.store (i32.const 64) (i32.add (i32.mul (i32.load (i32.const 0)) (i32.const 100)) (i32.load (i32.const 4))))";
        let snapshot = snapshot(&reactor(init), "webapp", REACTOR).unwrap();
        assert_eq!(read(&snapshot, REACTOR).0, 100 + "webapp\0".len() as i32);
    }

    #[test]
    fn an_initialisation_that_never_ends_is_stopped() {
        let bounds = Bounds {
            fuel: 1_000_000,
            ..BOUNDS
        };
        let endless = snapshot_within(&reactor("(loop $l (br $l))"), "plugin", REACTOR, bounds);
        let error = endless.unwrap_err();
        assert!(
            matches!(error, SnapshotError::Endless(1_000_000)),
            "{error}"
        );
        assert!(error.to_string().contains("did not finish"), "{error}");
    }

    #[test]
    fn an_initialisation_that_grows_past_its_memory_is_stopped() {
        let grow = "(drop (memory.grow (i32.const 20000)))";
        let error = snapshot(&reactor(grow), "plugin", REACTOR).unwrap_err();
        assert!(matches!(error, SnapshotError::Init(_)), "{error}");
        assert!(error.to_string().contains("memory"), "{error}");
    }

    #[test]
    fn an_initialisation_that_calls_the_host_is_refused_naming_the_import() {
        let error = snapshot(&reactor("(call $get)"), "plugin", REACTOR).unwrap_err();
        assert!(matches!(error, SnapshotError::Init(_)), "{error}");
        assert!(
            error.to_string().contains("wasmop:reconciler/cache@0.1.3"),
            "{error}"
        );
    }

    #[test]
    fn a_module_that_is_not_a_reactor_is_refused() {
        let command = wat::parse_str(r#"(module (func (export "_start")))"#).unwrap();
        let error = snapshot(&command, "plugin", REACTOR).unwrap_err();
        assert!(error.to_string().contains("_initialize"), "{error}");
    }

    #[test]
    fn near_segments_merge_with_the_zeros_between_and_far_ones_stay_apart() {
        let far = 5 + GAP + 1;
        let segments = vec![(3, vec![3]), (far, vec![4]), (0, vec![1, 2])];
        let merged = coalesce(segments);
        assert_eq!(merged, vec![(0, vec![1, 2, 0, 3]), (far, vec![4])]);
    }
}
