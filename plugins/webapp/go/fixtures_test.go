package main

import (
	"testing"

	"wasmop.dev/guest/guesttest/fixture"
)

// TestFixtures runs fixtures/, which `wasmop test` runs against the component too.
func TestFixtures(t *testing.T) {
	fixture.Run(t, "../fixtures")
}
