package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo is the repository root, from this package's directory.
const repo = "../../../../.."

func TestGeneratedBindingsAreCurrent(t *testing.T) {
	if err := run(filepath.Join(repo, "wit"), "handler-reconciler", filepath.Join(repo, "guest-sdk/go/internal/wit"), "wit", true); err != nil {
		t.Fatalf("%v (regenerate: cd guest-sdk/go/tools && go run ./cmd/wasmop-bindgen -wit ../../../wit -world handler-reconciler -out ../internal/wit)", err)
	}
}

// sample exercises what the reconciler world does not: spilled parameters, i64 joined with i32
// in a variant, results returned in one core value, tuples of three, chars and signed numbers.
const sample = `package test:sample@1.0.0;

interface shapes {
    variant mixed { small(u32), big(s64), text(string), none }
    record point { x: s16, y: s8, tag: char, on: bool }
    many: func(a: string, b: string, c: string, d: string, e: string, f: string, g: string, h: string, i: u32) -> u64;
    join: func(m: mixed, t: tuple<u8, point, option<u64>>) -> result<_, list<mixed>>;
    count: func() -> u32;
}

world sample {
    import shapes;
    use shapes.{point, mixed};
    export run: func(p: point, m: mixed) -> s32;
    export spill: func(a: string, b: string, c: string, d: string, e: string, f: string, g: string, h: string, i: u8) -> list<string>;
}
`

// generateSample writes the sample WIT to a temporary directory and generates its bindings.
func generateSample(t *testing.T) Files {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sample.wit"), []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	world, err := loadWorld(dir, "sample")
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(world, "sample")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestSpilledParametersGoThroughMemory(t *testing.T) {
	glue := string(generateSample(t)["abi_wasip1.go"])
	for _, want := range []string{
		"func wasmimportShapesMany(params uint32) uint64",
		"params := a.Alloc(68, 4)",
		"func wasmexportSpill(params uint32) uint32",
		"i := abi.U8(params + 64)",
		"//go:wasmexport cabi_post_spill",
	} {
		if !strings.Contains(glue, want) {
			t.Errorf("glue lacks %q", want)
		}
	}
}

func TestSingleCoreResultsAreReturnedDirectly(t *testing.T) {
	glue := string(generateSample(t)["abi_wasip1.go"])
	for _, want := range []string{
		"func wasmimportShapesCount() uint32",
		"ret := []uint64{uint64(wasmimportShapesCount())}",
		"func wasmexportRun(f0 uint32, f1 uint32, f2 uint32, f3 uint32, f4 uint32, f5 uint64, f6 uint32) uint32",
	} {
		if !strings.Contains(glue, want) {
			t.Errorf("glue lacks %q", want)
		}
	}
	if strings.Contains(glue, "cabi_post_run") {
		t.Error("a result in one core value needs no post-return")
	}
}

func TestVariantPayloadsShareJoinedSlots(t *testing.T) {
	glue := string(generateSample(t)["abi_wasip1.go"])
	for _, want := range []string{
		// mixed flattens to [i32 disc, i64 joined, i32]: every case lowers into f[1:].
		"f[1] = uint64(v.Small)",
		"f[1] = uint64(v.Big)",
		"a.LowerString(f[1:], v.Text)",
		"v.Big = int64(f[1])",
		// In memory the s64 case aligns every payload to 8.
		"v.Big = int64(abi.U64(p + 8))",
	} {
		if !strings.Contains(glue, want) {
			t.Errorf("glue lacks %q", want)
		}
	}
}

func TestSampleBindingsCompileForWasip1(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	vetForWasip1(t, generateSample(t))
}

func TestAnExportedInterfaceIsBoundWithItsQualifiedNamesAndPrefixedClashes(t *testing.T) {
	world, err := loadWorld(filepath.Join(repo, "wit"), "handler-reconciler")
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(world, "wit")
	if err != nil {
		t.Fatal(err)
	}
	types, glue := string(files["types.go"]), string(files["abi_wasip1.go"])
	for _, want := range []string{
		"type Registration struct",         // plugin's registration keeps its name
		"type WebhooksRegistration struct", // webhooks' registration is prefixed
		"WebhooksValidate(req AdmissionRequest) Verdict",
		"WebhooksDescribeWebhooks() WebhooksRegistration",
		"HandlersHandle(kind Gvk, change Change) []ObjectKey",
	} {
		if !strings.Contains(types, want) {
			t.Errorf("types.go lacks %q", want)
		}
	}
	for _, want := range []string{
		"//go:wasmexport wasmop:reconciler/webhooks@0.1.3#validate",
		"//go:wasmexport cabi_post_wasmop:reconciler/webhooks@0.1.3#validate",
		"//go:wasmexport wasmop:reconciler/handlers@0.1.3#handle",
	} {
		if !strings.Contains(glue, want) {
			t.Errorf("abi_wasip1.go lacks %q", want)
		}
	}
	if testing.Short() {
		return
	}
	vetForWasip1(t, files)
}

// vetForWasip1 runs go vet for wasip1 over files as a package of a module of its own.
func vetForWasip1(t *testing.T, files Files) {
	t.Helper()
	dir := t.TempDir()
	sdk, err := filepath.Abs(filepath.Join(repo, "guest-sdk/go"))
	if err != nil {
		t.Fatal(err)
	}
	mod := "module sample\n\ngo 1.26\n\nrequire wasmop.dev/guest v0.0.0\n\nreplace wasmop.dev/guest => " + sdk + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vet := exec.Command("go", "vet", ".")
	vet.Dir = dir
	vet.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=mod")
	if out, err := vet.CombinedOutput(); err != nil {
		t.Fatalf("go vet of the bindings: %v\n%s", err, out)
	}
}

func TestFloatsAreRefused(t *testing.T) {
	dir := t.TempDir()
	wit := "package test:f;\nworld f {\n  export half: func(x: f32) -> f32;\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "f.wit"), []byte(wit), 0o644); err != nil {
		t.Fatal(err)
	}
	world, err := loadWorld(dir, "f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(world, "f"); err == nil || !strings.Contains(err.Error(), "floating-point") {
		t.Fatalf("Generate = %v, want a floating-point error", err)
	}
}
