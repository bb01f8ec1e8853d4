module webapp

go 1.26

require wasmop.dev/guest v0.0.0

replace wasmop.dev/guest => ../../../guest-sdk/go
