// Command abi-probe checks the Go component pipeline in the real host with a hand-lowered ABI
// (no generated bindings): `describe` declares plugin webapp-probe on WebApps, and `reconcile`
// reads the WebApp with cache.get (the host re-enters Go's cabi_realloc during the import) and
// logs what it read, after growing a 1 MiB buffer to exercise Go's heap under the memory limit.
package main

import (
	"strconv"
	"unsafe"

	"github.com/wasmop/wasmop/guest-sdk/go/abi"
)

//go:wasmimport wasmop:reconciler/log@0.1.0 log
func logImport(level, msgPtr, msgLen, fieldsPtr, fieldsLen uint32)

//go:wasmimport wasmop:reconciler/cache@0.1.0 get
func cacheGet(g0, g1, g2, g3, g4, g5, n0, n1, m0, m1, ret uint32)

func sp(s string) (uint32, uint32) {
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s)))), uint32(len(s))
}

var keep []string

func put32(b []byte, off int, v uint32) {
	b[off], b[off+1], b[off+2], b[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func putStr(b []byte, off int, s string) {
	keep = append(keep, s)
	p, n := sp(s)
	put32(b, off, p)
	put32(b, off+4, n)
}

var reg [104]byte
var out [32]byte

func log(msg string) {
	p, n := sp(msg)
	logImport(2, p, n, 0, 0)
}

//go:wasmexport describe
func describe() uint32 {
	putStr(reg[:], 0, "webapp-probe")
	putStr(reg[:], 8, "0.1.0")
	putStr(reg[:], 16, "example.wasmop.dev")
	putStr(reg[:], 24, "v1alpha1")
	putStr(reg[:], 32, "WebApp")
	put32(reg[:], 80, 1)
	return uint32(uintptr(unsafe.Pointer(&reg[0])))
}

//go:wasmexport reconcile
func reconcile(nsP, nsL, nameP, nameL uint32) uint32 {
	ns := string(unsafe.Slice((*byte)(unsafe.Pointer(uintptr(nsP))), nsL))
	name := string(unsafe.Slice((*byte)(unsafe.Pointer(uintptr(nameP))), nameL))
	abi.Unpin()
	var ret [16]byte
	g0, g1 := sp("example.wasmop.dev")
	g2, g3 := sp("v1alpha1")
	g4, g5 := sp("WebApp")
	n0, n1 := sp(ns)
	m0, m1 := sp(name)
	cacheGet(g0, g1, g2, g3, g4, g5, n0, n1, m0, m1, uint32(uintptr(unsafe.Pointer(&ret[0]))))
	l := uint32(ret[8]) | uint32(ret[9])<<8 | uint32(ret[10])<<16 | uint32(ret[11])<<24
	p := uint32(ret[4]) | uint32(ret[5])<<8 | uint32(ret[6])<<16 | uint32(ret[7])<<24
	obj := string(unsafe.Slice((*byte)(unsafe.Pointer(uintptr(p))), l))
	abi.Unpin()
	big := make([]byte, 0, 1<<20)
	for i := 0; i < 20; i++ {
		big = append(big, obj...)
	}
	log("go probe reconciled " + ns + "/" + name + ": cache.get disc=" + strconv.Itoa(int(ret[0])) + " json=" + strconv.Itoa(len(obj)) + " bytes, head=" + obj[:min(40, len(obj))] + " grown=" + strconv.Itoa(len(big)))
	return uint32(uintptr(unsafe.Pointer(&out[0])))
}

//go:wasmexport map
func mapx(a, b, c, d, e, f, g, h uint32) uint32 { return uint32(uintptr(unsafe.Pointer(&out[0]))) }

func main() {}
