package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// controllerRuntime is the module whose importers hold a controller's markers.
const controllerRuntime = "sigs.k8s.io/controller-runtime"

// rbacPrefix starts an RBAC marker comment.
const rbacPrefix = "+kubebuilder:rbac:"

// Marker is one RBAC marker and where it was written.
type Marker struct {
	// At is file:line.
	At string `json:"at"`
	// Marker is what follows +kubebuilder:rbac:.
	Marker string `json:"marker"`
}

// listedPackage is what go list says of a package.
type listedPackage struct {
	Dir        string
	ImportPath string
	Name       string
	Standard   bool
	GoFiles    []string
	Imports    []string
}

// pluginMarkers are the markers of dir's main package and of the packages it depends on that
// import controller-runtime.
func pluginMarkers(dir string) ([]Marker, error) {
	cmd := exec.Command("go", "list", "-deps", "-json=Dir,ImportPath,Name,Standard,GoFiles,Imports", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list in %s: %v: %s", dir, err, stderr.String())
	}
	var markers []Marker
	decoder := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := decoder.Decode(&p); errors.Is(err, io.EOF) {
			return markers, nil
		} else if err != nil {
			return nil, err
		}
		if p.Standard || !(p.Name == "main" || importsControllerRuntime(p)) {
			continue
		}
		for _, file := range p.GoFiles {
			found, err := fileMarkers(filepath.Join(p.Dir, file), filepath.Join(p.ImportPath, file))
			if err != nil {
				return nil, err
			}
			markers = append(markers, found...)
		}
	}
}

func importsControllerRuntime(p listedPackage) bool {
	if p.ImportPath == controllerRuntime || strings.HasPrefix(p.ImportPath, controllerRuntime+"/") {
		return false
	}
	for _, imp := range p.Imports {
		if imp == controllerRuntime || strings.HasPrefix(imp, controllerRuntime+"/") {
			return true
		}
	}
	return false
}

// fileMarkers are the RBAC markers in the line comments of the file at path, named as name.
func fileMarkers(path, name string) ([]Marker, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var markers []Marker
	scanner := bufio.NewScanner(f)
	for line := 1; scanner.Scan(); line++ {
		text := strings.TrimSpace(scanner.Text())
		comment, ok := strings.CutPrefix(text, "//")
		if !ok {
			continue
		}
		if marker, ok := strings.CutPrefix(strings.TrimSpace(comment), rbacPrefix); ok {
			markers = append(markers, Marker{At: fmt.Sprintf("%s:%d", name, line), Marker: strings.TrimSpace(marker)})
		}
	}
	return markers, scanner.Err()
}
