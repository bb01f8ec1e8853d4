package main

import (
	"fmt"
	"go/token"
	"strings"

	"go.bytecodealliance.org/wit"
)

// goName is the exported Go name of a WIT identifier: `object-key` becomes `ObjectKey`.
func goName(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "-") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// reserved are the local names the generated glue uses; parameters are renamed around them.
var reserved = map[string]bool{"a": true, "p": true, "flat": true, "ret": true, "result": true, "params": true, "out": true}

// paramName is the Go name of a function parameter: lower camel case, never a keyword or a local
// of the glue.
func paramName(name string) string {
	n := goName(name)
	n = strings.ToLower(n[:1]) + n[1:]
	if token.IsKeyword(n) || reserved[n] {
		return n + "_"
	}
	return n
}

// moduleName is the core module name of an interface's imports, e.g. `wasmop:reconciler/log@0.1.3`.
func moduleName(iface *wit.Interface) string {
	id := iface.Package.Name
	name := fmt.Sprintf("%s:%s/%s", id.Namespace, id.Package, *iface.Name)
	if id.Version != nil {
		name += "@" + id.Version.String()
	}
	return name
}

// comment renders WIT docs as Go comment lines after a first line of its own.
func comment(first string, docs wit.Docs) string {
	lines := []string{"// " + first}
	if docs.Contents != "" {
		lines = append(lines, "//")
		for _, line := range strings.Split(strings.TrimSpace(docs.Contents), "\n") {
			lines = append(lines, strings.TrimRight("// "+line, " "))
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
