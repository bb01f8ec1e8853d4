package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
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

// Marker is one RBAC marker, where it was written and the reconciler it was written for.
type Marker struct {
	// At is file:line.
	At string `json:"at"`
	// Marker is what follows +kubebuilder:rbac:.
	Marker string `json:"marker"`
	// Owner is the type (import path.Name) whose method is the first declaration after the
	// marker — a controller's Reconcile, where kubebuilder puts its markers; empty when the
	// next declaration is not a method.
	Owner string `json:"owner,omitempty"`
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
			found, err := fileMarkers(filepath.Join(p.Dir, file), p.ImportPath, filepath.Join(p.ImportPath, file))
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

// fileMarkers are the RBAC markers in the line comments of the file at path (of package pkg),
// named as name, each with the receiver of the method declared next as its owner.
func fileMarkers(path, pkg, name string) ([]Marker, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var markers []Marker
	for _, group := range f.Comments {
		for _, c := range group.List {
			comment, ok := strings.CutPrefix(c.Text, "//")
			if !ok {
				continue
			}
			marker, ok := strings.CutPrefix(strings.TrimSpace(comment), rbacPrefix)
			if !ok {
				continue
			}
			at := fmt.Sprintf("%s:%d", name, fset.Position(c.Pos()).Line)
			markers = append(markers, Marker{At: at, Marker: strings.TrimSpace(marker), Owner: owner(f, c.Pos(), pkg)})
		}
	}
	return markers, nil
}

// owner is pkg.T when the first declaration of f after pos is a method of T (or *T).
func owner(f *ast.File, pos token.Pos, pkg string) string {
	for _, decl := range f.Decls {
		if decl.Pos() < pos {
			continue
		}
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
			return ""
		}
		typ := fn.Recv.List[0].Type
		if star, ok := typ.(*ast.StarExpr); ok {
			typ = star.X
		}
		if index, ok := typ.(*ast.IndexExpr); ok {
			typ = index.X
		}
		if ident, ok := typ.(*ast.Ident); ok {
			return pkg + "." + ident.Name
		}
		return ""
	}
	return ""
}
