// Package abi is the runtime half of the component bindings for Go's own wasip1 port: the
// `cabi_realloc` export the host allocates lifted values with, loads and stores of canonical-ABI
// memory, the arena that keeps lowered values alive while the host reads them, and the static
// arena the WASI adapter allocates from (see tools/cmd/wasmop-adapter-arena).
//
// Go on wasm keeps 64-bit pointers and 16-byte strings and slices in linear memory, while the
// canonical ABI lays out 32-bit pointers and 8-byte strings; bindings for this port therefore read
// and write canonical-ABI memory explicitly instead of overlaying Go types on it.
package abi
