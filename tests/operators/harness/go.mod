module wasmop.dev/tests/operators/harness

go 1.24.0
