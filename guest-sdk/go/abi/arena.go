package abi

// arenaSize is what the WASI preview1 adapter allocates in a component's life: its state and its
// stack, one 64 KiB page each, with room to align them.
const arenaSize = 4 << 16

// arena is the adapter's memory: a marker the componentizer finds in the data section, the size,
// then the bytes. It lives in the module's data, below Go's heap, so Go never reuses it.
type arena struct {
	marker [12]byte
	size   uint32
	bytes  [arenaSize]byte
}

var adapterArena = arena{
	marker: [12]byte{'w', 'a', 's', 'm', 'o', 'p', '-', 'a', 'r', 'e', 'n', 'a'},
	size:   arenaSize,
}
