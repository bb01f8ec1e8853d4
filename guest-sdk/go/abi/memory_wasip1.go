//go:build wasip1

package abi

import "unsafe"

// at is the Go pointer to linear-memory address p.
func at(p uint32) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(nil), uintptr(p))
}

// address is the linear-memory address of a Go pointer.
func address(p unsafe.Pointer) uint32 {
	return uint32(uintptr(p))
}

// U8 loads a byte from address p.
func U8(p uint32) uint8 { return *(*uint8)(at(p)) }

// U16 loads a little-endian uint16 from address p.
func U16(p uint32) uint16 { return *(*uint16)(at(p)) }

// U32 loads a little-endian uint32 from address p.
func U32(p uint32) uint32 { return *(*uint32)(at(p)) }

// U64 loads a little-endian uint64 from address p.
func U64(p uint32) uint64 { return *(*uint64)(at(p)) }

// PutU8 stores a byte at address p.
func PutU8(p uint32, v uint8) { *(*uint8)(at(p)) = v }

// PutU16 stores a little-endian uint16 at address p.
func PutU16(p uint32, v uint16) { *(*uint16)(at(p)) = v }

// PutU32 stores a little-endian uint32 at address p.
func PutU32(p uint32, v uint32) { *(*uint32)(at(p)) = v }

// PutU64 stores a little-endian uint64 at address p.
func PutU64(p uint32, v uint64) { *(*uint64)(at(p)) = v }

// Text copies the n bytes at address ptr into a Go string.
func Text(ptr, n uint32) string {
	if n == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(at(ptr)), n))
}

// LoadString copies the string whose pointer and length are stored at address p.
func LoadString(p uint32) string {
	return Text(U32(p), U32(p+4))
}

// LiftString copies the string whose pointer and length are the flat values f[0] and f[1].
func LiftString(f []uint64) string {
	return Text(uint32(f[0]), uint32(f[1]))
}
