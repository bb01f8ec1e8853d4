//go:build wasip1

package abi

import (
	"runtime"
	"runtime/debug"
)

var (
	// gcPercent is the collector's setting for the guest's turns; the collector is off from the
	// start, as the host lowers an export's arguments before the guest's first turn.
	gcPercent = debug.SetGCPercent(-1)
	// guestsTurn tells whether the collector may run now.
	guestsTurn bool
)

// GuestTurn lets the collector run while the guest's code does, from an export's start until
// the returned function, deferred to the export's end, hands the turn back to the host.
func GuestTurn() (done func()) {
	if guestsTurn {
		return stay
	}
	resume()
	return pause
}

// HostTurn stops the collector, letting a collection under way finish first, for an import
// call; the returned function, deferred to the call's end, gives the turn back to the guest.
// Outside a guest's turn (an init function logging) the collector is off already.
func HostTurn() (done func()) {
	if !guestsTurn {
		return stay
	}
	pause()
	return resume
}

func pause() {
	guestsTurn = false
	gcPercent = debug.SetGCPercent(-1)
}

func resume() {
	guestsTurn = true
	debug.SetGCPercent(gcPercent)
}

func stay() {}

// finishPreInitialisation runs once, at build time, after Go's runtime start and the package
// inits (`wasmop build` snapshots the module then): it collects what the inits left, so an
// instance starts with a heap of live objects and a collector goal to match, and its first turn
// does not begin with a collection of the whole init heap.
//
//go:wasmexport wasmop_pre_initialize
func finishPreInitialisation() {
	runtime.GC()
}
