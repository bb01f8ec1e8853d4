package main

import (
	"fmt"
	"strings"

	"go.bytecodealliance.org/wit"
)

// The canonical ABI passes at most this many flat parameters and results in core values; more
// go through linear memory.
const (
	maxFlatParams  = 16
	maxFlatResults = 1
)

// A function is one imported or exported WIT function as the glue sees it.
type function struct {
	goName   string // the Go method name, e.g. CacheGet
	module   string // the core module of an import, "" for an export
	name     string // the core function name
	params   []wit.Param
	result   wit.Type // nil when there is none
	docs     wit.Docs
	describe string // what the doc comment says it is
}

// newFunction checks that f fits the glue: at most one unnamed result.
func (g *generator) newFunction(f *wit.Function, goName, module, describe string) function {
	fn := function{goName: goName, module: module, name: f.Name, params: f.Params, docs: f.Docs, describe: describe}
	switch len(f.Results) {
	case 0:
	case 1:
		fn.result = f.Results[0].Type
	default:
		g.fail("%s: multiple results are not supported", f.Name)
	}
	return fn
}

// paramTypes are the WIT types of fn's parameters.
func (fn function) paramTypes() []wit.Type {
	types := make([]wit.Type, len(fn.params))
	for i, p := range fn.params {
		types[i] = p.Type
	}
	return types
}

// flatParams are the flat core types of fn's parameters, before spilling.
func (fn function) flatParams() []wit.Type {
	var all []wit.Type
	for _, p := range fn.params {
		all = append(all, flat(p.Type)...)
	}
	return all
}

// signature is the Go signature of fn, e.g. `(kind Gvk, name string) Result[Object, Error]`.
func (g *generator) signature(fn function) string {
	params := make([]string, len(fn.params))
	for i, p := range fn.params {
		params[i] = paramName(p.Name) + " " + g.goType(p.Type)
	}
	sig := "(" + strings.Join(params, ", ") + ")"
	if fn.result != nil {
		sig += " " + g.goType(fn.result)
	}
	return sig
}

// coreParams are the names and core types of the core function's parameters: the flat
// parameters, or one pointer when they spill.
func (g *generator) coreParams(fn function) []string {
	flatParams := fn.flatParams()
	if len(flatParams) > maxFlatParams {
		return []string{"params uint32"}
	}
	core := make([]string, len(flatParams))
	for i, t := range flatParams {
		core[i] = fmt.Sprintf("f%d %s", i, g.coreType(t))
	}
	return core
}

// importGlue writes the wasmimport declaration of fn and the Host method that calls it.
func (g *generator) importGlue(b *strings.Builder, fn function) {
	core := g.coreParams(fn)
	results := flat(fn.result)
	coreResult := ""
	if len(results) > maxFlatResults {
		core = append(core, "ret uint32")
	} else if len(results) == 1 {
		coreResult = " " + g.coreType(results[0])
	}
	lowered := "wasmimport" + fn.goName
	fmt.Fprintf(b, "//go:wasmimport %s %s\nfunc %s(%s)%s\n\n", fn.module, fn.name, lowered, strings.Join(core, ", "), coreResult)

	b.WriteString(comment(fmt.Sprintf("%s calls %s.", fn.goName, fn.describe), fn.docs))
	fmt.Fprintf(b, "func (Host) %s %s {\na := new(abi.Arena)\n", fn.goName, g.signature(fn))
	args := g.lowerParams(b, fn)
	if len(results) > maxFlatResults {
		s, al := size(fn.result), align(fn.result)
		fmt.Fprintf(b, "ret := a.Alloc(%d, %d)\n", s, al)
		args = append(args, "ret")
	}
	call := fmt.Sprintf("%s(%s)", lowered, strings.Join(args, ", "))
	switch {
	case len(results) > maxFlatResults:
		fmt.Fprintf(b, "%s\nresult := %s\n", call, g.load(fn.result, "ret"))
	case len(results) == 1:
		fmt.Fprintf(b, "ret := []uint64{uint64(%s)}\nresult := %s\n", call, g.lift(fn.result, "ret", 0))
	default:
		fmt.Fprintf(b, "%s\n", call)
	}
	b.WriteString("abi.Unpin()\na.Free()\n")
	if fn.result != nil {
		b.WriteString("return result\n")
	}
	b.WriteString("}\n\n")
}

// lowerParams writes the lowering of fn's parameters and returns the core arguments.
func (g *generator) lowerParams(b *strings.Builder, fn function) []string {
	flatParams := fn.flatParams()
	if len(flatParams) > maxFlatParams {
		s, al := tupleLayout(fn.paramTypes())
		fmt.Fprintf(b, "params := a.Alloc(%d, %d)\n", s, al)
		for i, off := range fieldOffsets(fn.paramTypes()) {
			fmt.Fprintf(b, "%s\n", g.store(fn.params[i].Type, addr("params", off), paramName(fn.params[i].Name)))
		}
		return []string{"params"}
	}
	if len(flatParams) == 0 {
		return nil
	}
	fmt.Fprintf(b, "var flat [%d]uint64\n", len(flatParams))
	slot := 0
	for _, p := range fn.params {
		fmt.Fprintf(b, "%s\n", g.lower(p.Type, "flat", slot, paramName(p.Name)))
		slot += len(flat(p.Type))
	}
	args := make([]string, len(flatParams))
	for i, t := range flatParams {
		args[i] = fmt.Sprintf("%s(flat[%d])", g.coreType(t), i)
	}
	return args
}

// exportGlue writes the wasmexport of fn, which lifts its parameters, calls Export and lowers the
// result, and its post-return, which frees the result.
func (g *generator) exportGlue(b *strings.Builder, fn function) {
	results := flat(fn.result)
	coreResult := ""
	if len(results) > maxFlatResults {
		coreResult = " uint32"
	} else if len(results) == 1 {
		coreResult = " " + g.coreType(results[0])
	}
	fmt.Fprintf(b, "//go:wasmexport %s\nfunc wasmexport%s(%s)%s {\n", fn.name, fn.goName, strings.Join(g.coreParams(fn), ", "), coreResult)
	args := g.liftParams(b, fn)
	b.WriteString("abi.Unpin()\n")
	call := fmt.Sprintf("Export.%s(%s)", fn.goName, strings.Join(args, ", "))
	switch {
	case len(results) > maxFlatResults:
		fmt.Fprintf(b, "result := %s\nexportArena.Free()\na := &exportArena\n", call)
		fmt.Fprintf(b, "ret := a.Alloc(%d, %d)\n%s\nreturn ret\n}\n\n", size(fn.result), align(fn.result), g.store(fn.result, "ret", "result"))
		fmt.Fprintf(b, "//go:wasmexport cabi_post_%s\nfunc wasmexportPost%s(uint32) {\nexportArena.Free()\n}\n\n", fn.name, fn.goName)
	case len(results) == 1:
		lower := g.lower(fn.result, "out", 0, "result")
		fmt.Fprintf(b, "result := %s\nexportArena.Free()\n", call)
		if strings.Contains(lower, "(a,") {
			b.WriteString("a := &exportArena\n")
		}
		fmt.Fprintf(b, "var out [1]uint64\n%s\nreturn %s(out[0])\n}\n\n", lower, g.coreType(results[0]))
	default:
		fmt.Fprintf(b, "%s\n}\n\n", call)
	}
}

// liftParams writes the lifting of fn's parameters and returns the Go arguments.
func (g *generator) liftParams(b *strings.Builder, fn function) []string {
	args := make([]string, len(fn.params))
	for i, p := range fn.params {
		args[i] = paramName(p.Name)
	}
	flatParams := fn.flatParams()
	if len(flatParams) > maxFlatParams {
		for i, off := range fieldOffsets(fn.paramTypes()) {
			fmt.Fprintf(b, "%s := %s\n", args[i], g.load(fn.params[i].Type, addr("params", off)))
		}
		return args
	}
	if len(flatParams) == 0 {
		return args
	}
	values := make([]string, len(flatParams))
	for i := range flatParams {
		values[i] = fmt.Sprintf("uint64(f%d)", i)
	}
	fmt.Fprintf(b, "flat := [...]uint64{%s}\n", strings.Join(values, ", "))
	slot := 0
	for i, p := range fn.params {
		fmt.Fprintf(b, "%s := %s\n", args[i], g.lift(p.Type, "flat", slot))
		slot += len(flat(p.Type))
	}
	return args
}
