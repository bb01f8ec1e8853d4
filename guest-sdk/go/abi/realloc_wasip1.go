//go:build wasip1

package abi

import "unsafe"

// pinned keeps the blocks the host allocated alive until their values are lifted; Go's collector
// does not see the host's references into linear memory.
var pinned [][]byte

// cabiRealloc allocates a block the host writes lifted strings and lists into.
//
//go:wasmexport cabi_realloc
func cabiRealloc(ptr, oldSize, align, newSize uint32) uint32 {
	if newSize == 0 {
		return align
	}
	block := make([]byte, newSize+align)
	addr := address(unsafe.Pointer(&block[0]))
	aligned := (addr + align - 1) &^ (align - 1)
	if oldSize > 0 {
		copy(block[aligned-addr:], unsafe.Slice((*byte)(at(ptr)), oldSize))
	}
	pinned = append(pinned, block)
	return aligned
}

// Unpin releases the blocks the host allocated, once every value in them has been copied out.
func Unpin() {
	pinned = nil
}

// arenaKeepalive keeps the adapter arena in the linked module.
//
//go:wasmexport wasmop_arena_size
func arenaKeepalive() uint32 {
	return adapterArena.size
}
