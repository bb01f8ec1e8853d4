//go:build !wasip1

package abi

// GuestTurn does nothing outside a component, where no host allocates in Go's heap.
func GuestTurn() (done func()) {
	return func() {}
}

// HostTurn does nothing outside a component, where no host allocates in Go's heap.
func HostTurn() (done func()) {
	return func() {}
}
