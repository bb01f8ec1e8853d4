module webapp

go 1.26

require wasmop.dev/guest v0.0.0

require go.yaml.in/yaml/v3 v3.0.6 // indirect

replace wasmop.dev/guest => ../../../guest-sdk/go
