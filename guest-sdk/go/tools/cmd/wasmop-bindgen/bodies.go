package main

import (
	"fmt"
	"strings"

	"go.bytecodealliance.org/wit"
)

// A field is one member of a record or tuple: its Go selector and WIT type.
type field struct {
	selector string
	typ      wit.Type
}

// arm is one case of a variant, option or result: how Go tests for it and sets it, and where its
// payload lives in the Go value.
type arm struct {
	test, set string
	payload   string
	typ       wit.Type
}

// structure describes a type that helpers marshal: fields for records and tuples, arms for
// variant-like types, or elem for a list.
type structure struct {
	fields []field
	arms   []arm
	elem   wit.Type
}

// structureOf takes t apart for its helpers.
func (g *generator) structureOf(t wit.Type) structure {
	td := resolve(t).(*wit.TypeDef)
	goType := g.goType(td)
	switch kind := td.Kind.(type) {
	case *wit.Record:
		var s structure
		for _, f := range kind.Fields {
			s.fields = append(s.fields, field{"v." + goName(f.Name), f.Type})
		}
		return s
	case *wit.Tuple:
		var s structure
		for i, e := range kind.Types {
			s.fields = append(s.fields, field{fmt.Sprintf("v.F%d", i), e})
		}
		return s
	case *wit.Variant:
		var s structure
		for _, c := range kind.Cases {
			cse := goType + goName(c.Name)
			a := arm{test: "v.Case == " + cse, set: "v.Case = " + cse, typ: c.Type}
			if c.Type != nil {
				a.payload = "v." + goName(c.Name)
			}
			s.arms = append(s.arms, a)
		}
		return s
	case *wit.Option:
		elem := g.goType(kind.Type)
		return structure{arms: []arm{
			{test: "v == nil", set: "v = nil"},
			{test: "v != nil", set: fmt.Sprintf("v = new(%s)", elem), payload: "*v", typ: kind.Type},
		}}
	case *wit.Result:
		ok := arm{test: "!v.IsErr", set: "v.IsErr = false", typ: kind.OK}
		if kind.OK != nil {
			ok.payload = "v.Ok"
		}
		err := arm{test: "v.IsErr", set: "v.IsErr = true", typ: kind.Err}
		if kind.Err != nil {
			err.payload = "v.Err"
		}
		return structure{arms: []arm{ok, err}}
	case *wit.List:
		return structure{elem: kind.Type}
	}
	g.fail("unsupported type %s", td.Kind.WITKind())
	return structure{}
}

// armTypes are the payload types of arms, nil where a case has none.
func armTypes(arms []arm) []wit.Type {
	types := make([]wit.Type, len(arms))
	for i, a := range arms {
		types[i] = a.typ
	}
	return types
}

// fieldTypes are the types of fields.
func fieldTypes(fields []field) []wit.Type {
	types := make([]wit.Type, len(fields))
	for i, f := range fields {
		types[i] = f.typ
	}
	return types
}

// discriminant is the abi accessor suffix and Go type of the discriminant of n cases.
func discriminant(n int) (string, string) {
	p := primitiveName(wit.Discriminant(n))
	return strings.ToUpper(p), primitives[p]
}

func (g *generator) loadBody(t wit.Type) string {
	s := g.structureOf(t)
	var b strings.Builder
	switch {
	case s.elem != nil:
		fmt.Fprintf(&b, "v = %s(abi.U32(p), abi.U32(p+4))", g.helper("list", t))
	case s.arms != nil:
		accessor, _ := discriminant(len(s.arms))
		off := payloadOffset(armTypes(s.arms))
		fmt.Fprintf(&b, "switch abi.%s(p) {\n", accessor)
		for i, a := range s.arms {
			fmt.Fprintf(&b, "case %d:\n%s\n", i, a.set)
			if a.payload != "" {
				fmt.Fprintf(&b, "%s = %s\n", a.payload, g.load(a.typ, addr("p", off)))
			}
		}
		b.WriteString("}")
	default:
		for i, off := range fieldOffsets(fieldTypes(s.fields)) {
			fmt.Fprintf(&b, "%s = %s\n", s.fields[i].selector, g.load(s.fields[i].typ, addr("p", off)))
		}
	}
	return b.String()
}

func (g *generator) storeBody(t wit.Type) string {
	s := g.structureOf(t)
	var b strings.Builder
	switch {
	case s.elem != nil:
		fmt.Fprintf(&b, "abi.PutU32(p, %s(a, v))\nabi.PutU32(p+4, uint32(len(v)))", g.helper("alloc", t))
	case s.arms != nil:
		accessor, goType := discriminant(len(s.arms))
		off := payloadOffset(armTypes(s.arms))
		b.WriteString("switch {\n")
		for i, a := range s.arms {
			fmt.Fprintf(&b, "case %s:\nabi.Put%s(p, %s(%d))\n", a.test, accessor, goType, i)
			if a.payload != "" {
				fmt.Fprintf(&b, "%s\n", g.store(a.typ, addr("p", off), a.payload))
			}
		}
		b.WriteString("}")
	default:
		for i, off := range fieldOffsets(fieldTypes(s.fields)) {
			fmt.Fprintf(&b, "%s\n", g.store(s.fields[i].typ, addr("p", off), s.fields[i].selector))
		}
	}
	return b.String()
}

func (g *generator) liftBody(t wit.Type) string {
	s := g.structureOf(t)
	var b strings.Builder
	switch {
	case s.elem != nil:
		fmt.Fprintf(&b, "v = %s(uint32(f[0]), uint32(f[1]))", g.helper("list", t))
	case s.arms != nil:
		b.WriteString("switch uint32(f[0]) {\n")
		for i, a := range s.arms {
			fmt.Fprintf(&b, "case %d:\n%s\n", i, a.set)
			if a.payload != "" {
				fmt.Fprintf(&b, "%s = %s\n", a.payload, g.lift(a.typ, "f", 1))
			}
		}
		b.WriteString("}")
	default:
		slot := 0
		for _, f := range s.fields {
			fmt.Fprintf(&b, "%s = %s\n", f.selector, g.lift(f.typ, "f", slot))
			slot += len(flat(f.typ))
		}
	}
	return b.String()
}

func (g *generator) lowerBody(t wit.Type) string {
	s := g.structureOf(t)
	var b strings.Builder
	switch {
	case s.elem != nil:
		fmt.Fprintf(&b, "f[0], f[1] = uint64(%s(a, v)), uint64(len(v))", g.helper("alloc", t))
	case s.arms != nil:
		b.WriteString("switch {\n")
		for i, a := range s.arms {
			fmt.Fprintf(&b, "case %s:\nf[0] = %d\n", a.test, i)
			if a.payload != "" {
				fmt.Fprintf(&b, "%s\n", g.lower(a.typ, "f", 1, a.payload))
			}
		}
		b.WriteString("}")
	default:
		slot := 0
		for _, f := range s.fields {
			fmt.Fprintf(&b, "%s\n", g.lower(f.typ, "f", slot, f.selector))
			slot += len(flat(f.typ))
		}
	}
	return b.String()
}
