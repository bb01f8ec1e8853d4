package main

import (
	"fmt"

	"go.bytecodealliance.org/wit"
)

// size is the canonical ABI size of t in bytes (0 for a missing payload).
func size(t wit.Type) uint32 {
	if t == nil {
		return 0
	}
	return uint32(t.Size())
}

// align is the canonical ABI alignment of t (1 for a missing payload).
func align(t wit.Type) uint32 {
	if t == nil {
		return 1
	}
	return uint32(t.Align())
}

// flat is the flattened core types of t (none for a missing payload).
func flat(t wit.Type) []wit.Type {
	if t == nil {
		return nil
	}
	return t.Flat()
}

// alignTo rounds n up to a multiple of a.
func alignTo(n, a uint32) uint32 {
	return (n + a - 1) &^ (a - 1)
}

// fieldOffsets are the byte offsets of a record's or tuple's fields, in order.
func fieldOffsets(types []wit.Type) []uint32 {
	offsets := make([]uint32, len(types))
	var off uint32
	for i, t := range types {
		off = alignTo(off, align(t))
		offsets[i] = off
		off += size(t)
	}
	return offsets
}

// tupleSize and tupleAlign are the layout of the record holding types, e.g. spilled parameters.
func tupleLayout(types []wit.Type) (uint32, uint32) {
	var end, maxAlign uint32 = 0, 1
	for i, off := range fieldOffsets(types) {
		end = off + size(types[i])
		maxAlign = max(maxAlign, align(types[i]))
	}
	return alignTo(end, maxAlign), maxAlign
}

// payloadOffset is where the payload of a variant-like type with these case types starts.
func payloadOffset(cases []wit.Type) uint32 {
	maxAlign := uint32(1)
	for _, t := range cases {
		maxAlign = max(maxAlign, align(t))
	}
	return alignTo(size(wit.Discriminant(len(cases))), maxAlign)
}

// coreType is the Go type of one flat core value.
func (g *generator) coreType(t wit.Type) string {
	switch t.(type) {
	case wit.U64, wit.S64:
		return "uint64"
	case wit.F32, wit.F64:
		g.fail("floating-point values are not supported")
	}
	return "uint32"
}

// addr is the address expression p+off.
func addr(p string, off uint32) string {
	if off == 0 {
		return p
	}
	return fmt.Sprintf("%s+%d", p, off)
}
