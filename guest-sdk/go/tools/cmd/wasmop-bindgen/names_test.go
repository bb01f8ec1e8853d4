package main

import (
	"testing"

	"go.bytecodealliance.org/wit"
)

func TestNamesAreGoIdentifiers(t *testing.T) {
	for in, want := range map[string]string{"object-key": "ObjectKey", "gvk": "Gvk", "list-by-index": "ListByIndex"} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"type": "type_", "label-selector": "labelSelector", "ret": "ret_"} {
		if got := paramName(in); got != want {
			t.Errorf("paramName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLayoutFollowsTheCanonicalABI(t *testing.T) {
	// A record {u8, u64, string}: the u64 aligns to 8, the string to 4.
	offsets := fieldOffsets([]wit.Type{wit.U8{}, wit.U64{}, wit.String{}})
	if offsets[0] != 0 || offsets[1] != 8 || offsets[2] != 16 {
		t.Errorf("offsets = %v, want [0 8 16]", offsets)
	}
	if size, align := tupleLayout([]wit.Type{wit.U8{}, wit.U64{}, wit.String{}}); size != 24 || align != 8 {
		t.Errorf("layout = %d/%d, want 24/8", size, align)
	}
	// Payloads start after the discriminant, aligned to the largest case.
	if off := payloadOffset([]wit.Type{nil, wit.U64{}}); off != 8 {
		t.Errorf("payload offset = %d, want 8", off)
	}
	if off := payloadOffset([]wit.Type{wit.U8{}, nil}); off != 1 {
		t.Errorf("payload offset = %d, want 1", off)
	}
}
