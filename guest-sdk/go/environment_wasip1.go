//go:build wasip1

package guest

import (
	"os"
	"strings"
	"unsafe"

	"wasmop.dev/guest/abi"
)

//go:wasmimport wasi_snapshot_preview1 args_sizes_get
func argsSizesGet(count, size unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 args_get
func argsGet(pointers, buf unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 environ_sizes_get
func environSizesGet(count, size unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 environ_get
func environGet(pointers, buf unsafe.Pointer) uint32

// adoptInstanceEnvironment makes os.Args and the environment the instance's: Go's runtime read
// them when it started, which for a pre-initialised plugin was at build time.
func adoptInstanceEnvironment() {
	if args, ok := wasiStrings(argsSizesGet, argsGet); ok {
		os.Args = args
	}
	env, ok := wasiStrings(environSizesGet, environGet)
	if !ok {
		return
	}
	os.Clearenv()
	for _, kv := range env {
		if k, v, found := strings.Cut(kv, "="); found {
			os.Setenv(k, v)
		}
	}
}

// wasiStrings reads a WASI string list (the arguments or the environment) with its two calls.
func wasiStrings(sizes, get func(a, b unsafe.Pointer) uint32) ([]string, bool) {
	defer abi.HostTurn()()
	var count, size uint32
	if sizes(unsafe.Pointer(&count), unsafe.Pointer(&size)) != 0 {
		return nil, false
	}
	if count == 0 {
		return []string{}, true
	}
	pointers := make([]uint32, count)
	buf := make([]byte, size)
	if get(unsafe.Pointer(&pointers[0]), unsafe.Pointer(&buf[0])) != 0 {
		return nil, false
	}
	return strings.Split(strings.TrimSuffix(string(buf), "\x00"), "\x00"), true
}
