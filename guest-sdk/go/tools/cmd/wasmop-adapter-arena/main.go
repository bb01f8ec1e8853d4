// Command wasmop-adapter-arena gives a Go wasip1 core module the `cabi_realloc_adapter` export
// that the WASI preview1 adapter allocates its state from.
//
// Without it the adapter calls the module's `cabi_realloc`, a Go function, on the first WASI call
// — which Go's runtime makes while it initialises, before any Go export may run. The new export
// is a plain WebAssembly bump allocator over a static arena the SDK reserves in the module's data
// (found by its marker bytes), so it never enters Go and never touches memory Go's heap uses.
//
//	wasmop-adapter-arena IN.wasm OUT.wasm
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: wasmop-adapter-arena IN.wasm OUT.wasm")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintf(os.Stderr, "wasmop-adapter-arena: %v\n", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	wasm, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	patched, err := addAdapterRealloc(wasm)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return os.WriteFile(out, patched, 0o644)
}
