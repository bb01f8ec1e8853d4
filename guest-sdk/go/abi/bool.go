package abi

// Bool is the canonical ABI's byte for b: 1 for true, 0 for false.
func Bool(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
