// Package abi is the runtime half of the component bindings for Go's own wasip1 port: the
// `cabi_realloc` export the host allocates lifted values with, loads and stores of canonical-ABI
// memory, the arena that keeps lowered values alive while the host reads them, and the static
// arena the WASI adapter allocates from (see tools/cmd/wasmop-adapter-arena).
//
// Go on wasm keeps 64-bit pointers and 16-byte strings and slices in linear memory, while the
// canonical ABI lays out 32-bit pointers and 8-byte strings; bindings for this port therefore read
// and write canonical-ABI memory explicitly instead of overlaying Go types on it.
//
// The collector runs only during the guest's turns (GuestTurn, HostTurn): `cabi_realloc`
// allocates from Go's heap while the host lowers a value into the guest, when the component may
// not call the host, and a collection starting there reads the clock and polls through the WASI
// adapter, which calls the host: wasmtime traps with "cannot leave component instance".
package abi
