package main

import (
	"fmt"
	"strings"

	"go.bytecodealliance.org/wit"
)

// A value of a WIT type moves in one of four ways: stored to or loaded from linear memory at an
// address, or lowered to or lifted from flat core values (a []uint64 window, each i32 zero-extended,
// which makes joined variant payloads plain). Primitives and enums are inline expressions; every
// other type gets a helper function per way, generated on first use.

// load is the expression loading a t from address p.
func (g *generator) load(t wit.Type, p string) string {
	t = resolve(t)
	switch primitiveName(t) {
	case "bool":
		return fmt.Sprintf("abi.U8(%s) != 0", p)
	case "u8":
		return fmt.Sprintf("abi.U8(%s)", p)
	case "s8":
		return fmt.Sprintf("int8(abi.U8(%s))", p)
	case "u16":
		return fmt.Sprintf("abi.U16(%s)", p)
	case "s16":
		return fmt.Sprintf("int16(abi.U16(%s))", p)
	case "u32":
		return fmt.Sprintf("abi.U32(%s)", p)
	case "s32":
		return fmt.Sprintf("int32(abi.U32(%s))", p)
	case "char":
		return fmt.Sprintf("rune(abi.U32(%s))", p)
	case "u64":
		return fmt.Sprintf("abi.U64(%s)", p)
	case "s64":
		return fmt.Sprintf("int64(abi.U64(%s))", p)
	case "string":
		return fmt.Sprintf("abi.LoadString(%s)", p)
	}
	if enum, ok := g.enum(t); ok {
		accessor, _ := discriminant(enum)
		return fmt.Sprintf("%s(abi.%s(%s))", g.goType(t), accessor, p)
	}
	return fmt.Sprintf("%s(%s)", g.helper("load", t), p)
}

// store is the statement storing v, a t, at address p, keeping its memory in arena a.
func (g *generator) store(t wit.Type, p, v string) string {
	t = resolve(t)
	switch primitiveName(t) {
	case "bool":
		return fmt.Sprintf("abi.PutU8(%s, abi.Bool(%s))", p, v)
	case "u8":
		return fmt.Sprintf("abi.PutU8(%s, %s)", p, v)
	case "s8":
		return fmt.Sprintf("abi.PutU8(%s, uint8(%s))", p, v)
	case "u16":
		return fmt.Sprintf("abi.PutU16(%s, %s)", p, v)
	case "s16":
		return fmt.Sprintf("abi.PutU16(%s, uint16(%s))", p, v)
	case "u32":
		return fmt.Sprintf("abi.PutU32(%s, %s)", p, v)
	case "s32", "char":
		return fmt.Sprintf("abi.PutU32(%s, uint32(%s))", p, v)
	case "u64":
		return fmt.Sprintf("abi.PutU64(%s, %s)", p, v)
	case "s64":
		return fmt.Sprintf("abi.PutU64(%s, uint64(%s))", p, v)
	case "string":
		return fmt.Sprintf("a.StoreString(%s, %s)", p, v)
	}
	if enum, ok := g.enum(t); ok {
		accessor, goType := discriminant(enum)
		return fmt.Sprintf("abi.Put%s(%s, %s(%s))", accessor, p, goType, v)
	}
	return fmt.Sprintf("%s(a, %s, %s)", g.helper("store", t), p, v)
}

// lift is the expression lifting a t from the flat values f[off:].
func (g *generator) lift(t wit.Type, f string, off int) string {
	t = resolve(t)
	slot := fmt.Sprintf("%s[%d]", f, off)
	switch primitiveName(t) {
	case "bool":
		return fmt.Sprintf("uint32(%s) != 0", slot)
	case "u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64":
		return fmt.Sprintf("%s(%s)", g.goType(t), slot)
	case "char":
		return fmt.Sprintf("rune(uint32(%s))", slot)
	case "string":
		return fmt.Sprintf("abi.LiftString(%s[%d:])", f, off)
	}
	if _, ok := g.enum(t); ok {
		return fmt.Sprintf("%s(%s)", g.goType(t), slot)
	}
	return fmt.Sprintf("%s(%s[%d:])", g.helper("lift", t), f, off)
}

// lower is the statement lowering v, a t, into the flat values f[off:], keeping its memory in
// arena a.
func (g *generator) lower(t wit.Type, f string, off int, v string) string {
	t = resolve(t)
	slot := fmt.Sprintf("%s[%d]", f, off)
	switch primitiveName(t) {
	case "bool":
		return fmt.Sprintf("%s = uint64(abi.Bool(%s))", slot, v)
	case "u8", "u16", "u32", "u64", "s64":
		return fmt.Sprintf("%s = uint64(%s)", slot, v)
	case "s8", "s16", "s32", "char":
		return fmt.Sprintf("%s = uint64(uint32(%s))", slot, v)
	case "string":
		return fmt.Sprintf("a.LowerString(%s[%d:], %s)", f, off, v)
	}
	if _, ok := g.enum(t); ok {
		return fmt.Sprintf("%s = uint64(%s)", slot, v)
	}
	return fmt.Sprintf("%s(a, %s[%d:], %s)", g.helper("lower", t), f, off, v)
}

// enum reports whether t is an enum, with its number of cases.
func (g *generator) enum(t wit.Type) (int, bool) {
	td, ok := t.(*wit.TypeDef)
	if !ok {
		return 0, false
	}
	e, ok := td.Kind.(*wit.Enum)
	if !ok {
		return 0, false
	}
	return len(e.Cases), true
}

// mangle is the suffix of t's helper functions: its Go name, or a name spelled from its structure.
func (g *generator) mangle(t wit.Type) string {
	t = resolve(t)
	if t == nil {
		return "Unit"
	}
	if p := primitiveName(t); p != "" {
		return goName(p)
	}
	td, ok := t.(*wit.TypeDef)
	if !ok {
		g.fail("floating-point values are not supported")
		return "Unsupported"
	}
	if name, ok := g.names[td]; ok {
		return name
	}
	switch kind := td.Kind.(type) {
	case *wit.Option:
		return "Option" + g.mangle(kind.Type)
	case *wit.List:
		return "List" + g.mangle(kind.Type)
	case *wit.Tuple:
		parts := make([]string, len(kind.Types))
		for i, e := range kind.Types {
			parts[i] = g.mangle(e)
		}
		return "Tuple" + strings.Join(parts, "")
	case *wit.Result:
		return "Result" + g.mangle(kind.OK) + g.mangle(kind.Err)
	}
	g.fail("unsupported type %s", td.Kind.WITKind())
	return "Unsupported"
}

// helper is the name of the helper function doing `way` for t, generating it on first use.
func (g *generator) helper(way string, t wit.Type) string {
	name := way + g.mangle(t)
	if _, ok := resolve(t).(*wit.TypeDef); !ok || g.emitted[name] {
		return name
	}
	g.emitted[name] = true
	var b strings.Builder
	goType := g.goType(t)
	switch way {
	case "load":
		fmt.Fprintf(&b, "func %s(p uint32) (v %s) {\n%s\nreturn v\n}\n\n", name, goType, strings.TrimSpace(g.loadBody(t)))
	case "store":
		fmt.Fprintf(&b, "func %s(a *abi.Arena, p uint32, v %s) {\n%s\n}\n\n", name, goType, strings.TrimSpace(g.storeBody(t)))
	case "lift":
		fmt.Fprintf(&b, "func %s(f []uint64) (v %s) {\n%s\nreturn v\n}\n\n", name, goType, strings.TrimSpace(g.liftBody(t)))
	case "lower":
		fmt.Fprintf(&b, "func %s(a *abi.Arena, f []uint64, v %s) {\n%s\n}\n\n", name, goType, strings.TrimSpace(g.lowerBody(t)))
	case "list":
		elem := t.(*wit.TypeDef).Kind.(*wit.List).Type
		fmt.Fprintf(&b, "func %s(ptr, n uint32) %s {\nv := make(%s, n)\nfor i := range v {\nv[i] = %s\n}\nreturn v\n}\n\n",
			name, goType, goType, g.load(elem, fmt.Sprintf("ptr+uint32(i)*%d", size(elem))))
	case "alloc":
		elem := t.(*wit.TypeDef).Kind.(*wit.List).Type
		fmt.Fprintf(&b, "func %s(a *abi.Arena, v %s) uint32 {\nptr := a.Alloc(uint32(len(v))*%d, %d)\nfor i := range v {\n%s\n}\nreturn ptr\n}\n\n",
			name, goType, size(elem), align(elem), g.store(elem, fmt.Sprintf("ptr+uint32(i)*%d", size(elem)), "v[i]"))
	}
	g.helpers = append(g.helpers, b.String())
	return name
}
