package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// arenaMarker opens the SDK's adapter arena in the module's data: the marker, then the arena's
// size as a little-endian u32, then the arena itself. It must match guest-sdk/go/abi/arena.go.
var arenaMarker = []byte("wasmop-arena")

const (
	sectionType     = 1
	sectionImport   = 2
	sectionFunction = 3
	sectionGlobal   = 6
	sectionExport   = 7
	sectionCode     = 10
	sectionData     = 11
)

type section struct {
	id   byte
	body []byte
}

// addAdapterRealloc appends a mutable global (the bump pointer), a bump-allocating function over
// the arena, and its export as `cabi_realloc_adapter`.
func addAdapterRealloc(wasm []byte) ([]byte, error) {
	sections, err := parseSections(wasm)
	if err != nil {
		return nil, err
	}
	start, size, err := findArena(sections)
	if err != nil {
		return nil, err
	}
	importedFuncs, importedGlobals, err := countImports(sections)
	if err != nil {
		return nil, err
	}
	var typeIndex, funcIndex, globalIndex uint32
	for _, want := range []byte{sectionType, sectionFunction, sectionGlobal, sectionExport, sectionCode} {
		s := find(sections, want)
		if s == nil {
			return nil, fmt.Errorf("the module has no section %d to extend", want)
		}
		count, _, err := uleb(s.body)
		if err != nil {
			return nil, err
		}
		switch want {
		case sectionType:
			typeIndex = count
			s.body = appendEntry(s.body, []byte{0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f})
		case sectionFunction:
			funcIndex = importedFuncs + count
			s.body = appendEntry(s.body, appendULEB(nil, typeIndex))
		case sectionGlobal:
			globalIndex = importedGlobals + count
			global := append([]byte{0x7f, 1, 0x41}, appendSLEB(nil, int64(start))...)
			s.body = appendEntry(s.body, append(global, 0x0b))
		case sectionExport:
			name := "cabi_realloc_adapter"
			export := append(appendULEB(nil, uint32(len(name))), name...)
			export = append(export, 0)
			s.body = appendEntry(s.body, appendULEB(export, funcIndex))
		case sectionCode:
			body := allocatorBody(globalIndex, start+size)
			s.body = appendEntry(s.body, append(appendULEB(nil, uint32(len(body))), body...))
		}
	}
	out := append([]byte(nil), wasm[:8]...)
	for _, s := range sections {
		out = append(out, s.id)
		out = appendULEB(out, uint32(len(s.body)))
		out = append(out, s.body...)
	}
	return out, nil
}

// allocatorBody is `cabi_realloc(old, old_len, align, new_len)` for fresh allocations: it aligns
// the bump pointer, traps past the arena's end, and returns the block.
func allocatorBody(global, limit uint32) []byte {
	g := appendULEB(nil, global)
	code := []byte{1, 1, 0x7f} // one i32 local: the block
	code = append(append(code, 0x23), g...)
	code = append(code, 0x20, 2, 0x6a, 0x41, 1, 0x6b, 0x41, 0, 0x20, 2, 0x6b, 0x71, 0x21, 4)
	code = append(code, 0x20, 4, 0x20, 3, 0x6a, 0x41)
	code = appendSLEB(code, int64(limit))
	code = append(code, 0x4b, 0x04, 0x40, 0x00, 0x0b)
	code = append(code, 0x20, 4, 0x20, 3, 0x6a, 0x24)
	code = append(code, g...)
	return append(code, 0x20, 4, 0x0b)
}

func parseSections(wasm []byte) ([]section, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) || wasm[4] != 1 {
		return nil, errors.New("not a WebAssembly core module")
	}
	var sections []section
	rest := wasm[8:]
	for len(rest) > 0 {
		id := rest[0]
		size, n, err := uleb(rest[1:])
		if err != nil {
			return nil, err
		}
		begin := 1 + n
		if uint64(len(rest)) < uint64(begin)+uint64(size) {
			return nil, fmt.Errorf("section %d runs past the end of the module", id)
		}
		sections = append(sections, section{id: id, body: append([]byte(nil), rest[begin:begin+int(size)]...)})
		rest = rest[begin+int(size):]
	}
	return sections, nil
}

func find(sections []section, id byte) *section {
	for i := range sections {
		if sections[i].id == id {
			return &sections[i]
		}
	}
	return nil
}

// findArena returns the address and size of the arena from the active data segments. The
// linker splits segments at runs of zeros, so the size is read from the whole data image.
func findArena(sections []section) (start, size uint32, err error) {
	s := find(sections, sectionData)
	if s == nil {
		return 0, 0, errors.New("the module has no data section")
	}
	segments, err := activeSegments(s.body)
	if err != nil {
		return 0, 0, err
	}
	for _, seg := range segments {
		if at := bytes.Index(seg.data, arenaMarker); at >= 0 {
			header := seg.offset + uint32(at+len(arenaMarker))
			var le [4]byte
			for i := range le {
				le[i] = byteAt(segments, header+uint32(i))
			}
			return header + 4, binary.LittleEndian.Uint32(le[:]), nil
		}
	}
	return 0, 0, fmt.Errorf("no %q arena in the data: is the module built with the wasmop Go SDK?", arenaMarker)
}

type segment struct {
	offset uint32
	data   []byte
}

func activeSegments(body []byte) ([]segment, error) {
	r := reader{buf: body}
	var segments []segment
	count := r.uleb()
	for i := uint32(0); i < count && r.err == nil; i++ {
		flags := r.uleb()
		if flags == 2 {
			r.uleb()
		}
		var offset uint32
		if flags != 1 {
			if r.byte() != 0x41 {
				return nil, errors.New("a data segment's offset is not an i32.const")
			}
			offset = uint32(r.sleb())
			r.byte()
		}
		data := r.bytes(r.uleb())
		if flags != 1 {
			segments = append(segments, segment{offset: offset, data: data})
		}
	}
	return segments, r.err
}

func byteAt(segments []segment, addr uint32) byte {
	for _, seg := range segments {
		if addr >= seg.offset && addr-seg.offset < uint32(len(seg.data)) {
			return seg.data[addr-seg.offset]
		}
	}
	return 0
}

func countImports(sections []section) (funcs, globals uint32, err error) {
	s := find(sections, sectionImport)
	if s == nil {
		return 0, 0, nil
	}
	r := reader{buf: s.body}
	count := r.uleb()
	for i := uint32(0); i < count && r.err == nil; i++ {
		r.bytes(r.uleb())
		r.bytes(r.uleb())
		switch kind := r.byte(); kind {
		case 0:
			r.uleb()
			funcs++
		case 1:
			r.byte()
			r.limits()
		case 2:
			r.limits()
		case 3:
			r.byte()
			r.byte()
			globals++
		default:
			return 0, 0, fmt.Errorf("unsupported import kind %d", kind)
		}
	}
	return funcs, globals, r.err
}

// appendEntry adds one entry to a vector-shaped section body, bumping its count.
func appendEntry(body, entry []byte) []byte {
	count, n, _ := uleb(body)
	out := appendULEB(nil, count+1)
	out = append(out, body[n:]...)
	return append(out, entry...)
}
