//go:build !wasip1

package guest

// adoptInstanceEnvironment does nothing outside a component: the process's arguments and
// environment are its own.
func adoptInstanceEnvironment() {}
