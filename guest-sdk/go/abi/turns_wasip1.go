//go:build wasip1

package abi

import "runtime/debug"

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
