// Package host holds the imports the SDK calls: the real host's under wasip1, a fake in tests.
package host

import "wasmop.dev/guest/internal/wit"

// imports is the host the SDK talks to; nil until a component starts or a test installs one.
var imports wit.Imports

// Use makes h the host every SDK call goes to.
func Use(h wit.Imports) {
	imports = h
}

// Get is the host to call; it panics when there is none, which only happens outside a component
// and outside guesttest.
func Get() wit.Imports {
	if imports == nil {
		panic("wasmop: no host: run inside a component, or install guesttest.New() in tests")
	}
	return imports
}
