module github.com/wasmop/wasmop/guest-sdk/go

go 1.26
