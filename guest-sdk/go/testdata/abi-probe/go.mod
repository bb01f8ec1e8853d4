module abi-probe

go 1.26

require github.com/wasmop/wasmop/guest-sdk/go v0.0.0

replace github.com/wasmop/wasmop/guest-sdk/go => ../..
