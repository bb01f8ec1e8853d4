//go:build wasip1

package abi

import "unsafe"

// Arena keeps the memory of values lowered for the host alive until the host is done with them:
// the arguments of one import call, or the result of an export until its post-return.
type Arena struct {
	keep []any
}

// Alloc reserves size bytes aligned to align and returns their address.
func (a *Arena) Alloc(size, align uint32) uint32 {
	if size == 0 {
		return align
	}
	block := make([]byte, size+align)
	a.keep = append(a.keep, block)
	addr := address(unsafe.Pointer(&block[0]))
	return (addr + align - 1) &^ (align - 1)
}

// String returns the address and length of s, keeping s alive.
func (a *Arena) String(s string) (ptr, n uint32) {
	if len(s) == 0 {
		return 1, 0
	}
	a.keep = append(a.keep, s)
	return address(unsafe.Pointer(unsafe.StringData(s))), uint32(len(s))
}

// StoreString stores the pointer and length of s at address p.
func (a *Arena) StoreString(p uint32, s string) {
	ptr, n := a.String(s)
	PutU32(p, ptr)
	PutU32(p+4, n)
}

// LowerString sets the flat values f[0] and f[1] to the pointer and length of s.
func (a *Arena) LowerString(f []uint64, s string) {
	ptr, n := a.String(s)
	f[0], f[1] = uint64(ptr), uint64(n)
}

// Free lets the collector reclaim everything the arena kept.
func (a *Arena) Free() {
	a.keep = nil
}
