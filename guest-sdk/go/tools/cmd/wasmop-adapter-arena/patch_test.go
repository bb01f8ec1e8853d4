package main

import (
	"bytes"
	"testing"
)

// module builds a core module with empty vector sections and the given data segments.
func module(segments ...[]byte) []byte {
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	for _, id := range []byte{sectionType, sectionFunction, sectionGlobal, sectionExport, sectionCode} {
		wasm = append(wasm, id, 1, 0)
	}
	data := appendULEB(nil, uint32(len(segments)))
	for _, s := range segments {
		data = append(data, s...)
	}
	wasm = append(wasm, sectionData)
	wasm = appendULEB(wasm, uint32(len(data)))
	return append(wasm, data...)
}

func dataSegment(offset uint32, data []byte) []byte {
	s := append([]byte{0, 0x41}, appendSLEB(nil, int64(offset))...)
	s = append(s, 0x0b)
	s = appendULEB(s, uint32(len(data)))
	return append(s, data...)
}

func TestArenaIsFoundWhenTheLinkerSplitsItsSizeIntoAnotherSegment(t *testing.T) {
	wasm := module(
		dataSegment(70000, append([]byte("xx"), arenaMarker...)),
		dataSegment(70016, []byte{4}), // size 0x00040000: its first two bytes are zeros left out
	)
	sections, err := parseSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	start, size, err := findArena(sections)
	if err != nil {
		t.Fatal(err)
	}
	if start != 70000+2+12+4 || size != 4<<16 {
		t.Fatalf("arena at %d size %d", start, size)
	}
}

func TestAddAdapterReallocExportsTheAllocator(t *testing.T) {
	wasm := module(dataSegment(1024, append(append([]byte{}, arenaMarker...), 0, 0, 1, 0)))
	patched, err := addAdapterRealloc(wasm)
	if err != nil {
		t.Fatal(err)
	}
	sections, err := parseSections(patched)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []byte{sectionType, sectionFunction, sectionGlobal, sectionExport, sectionCode} {
		if count, _, _ := uleb(find(sections, id).body); count != 1 {
			t.Errorf("section %d has %d entries, want 1", id, count)
		}
	}
	if !bytes.Contains(find(sections, sectionExport).body, []byte("cabi_realloc_adapter")) {
		t.Error("no cabi_realloc_adapter export")
	}
	global := find(sections, sectionGlobal).body
	if want := append([]byte{1, 0x7f, 1, 0x41}, appendSLEB(nil, 1024+16)...); !bytes.HasPrefix(global, want) {
		t.Errorf("bump pointer %x, want it to start at the arena (%x)", global, want)
	}
}

func TestAModuleWithoutTheArenaIsRefused(t *testing.T) {
	if _, err := addAdapterRealloc(module(dataSegment(8, []byte("data")))); err == nil {
		t.Fatal("patched a module without an arena")
	}
}

func TestLEB128RoundTrips(t *testing.T) {
	for _, v := range []uint32{0, 1, 127, 128, 65536, 1<<32 - 1} {
		got, n, err := uleb(appendULEB(nil, v))
		if err != nil || got != v || n != len(appendULEB(nil, v)) {
			t.Errorf("uleb(%d) = %d, %d, %v", v, got, n, err)
		}
	}
	for _, v := range []int64{0, 63, 64, -1, -65, 1 << 31} {
		r := reader{buf: appendSLEB(nil, v)}
		if got := r.sleb(); got != v || r.err != nil {
			t.Errorf("sleb(%d) = %d, %v", v, got, r.err)
		}
	}
}
