module github.com/wasmop/wasmop/guest-sdk/go/tools

go 1.26
