package main

import (
	"fmt"
	"strings"

	"go.bytecodealliance.org/wit"
)

// primitives maps each supported WIT primitive to its Go type.
var primitives = map[string]string{
	"bool": "bool", "u8": "uint8", "s8": "int8", "u16": "uint16", "s16": "int16",
	"u32": "uint32", "s32": "int32", "u64": "uint64", "s64": "int64", "char": "rune",
	"string": "string",
}

// primitiveName is the WIT name of a primitive type, or "" when t is not one.
func primitiveName(t wit.Type) string {
	switch t.(type) {
	case wit.Bool:
		return "bool"
	case wit.U8:
		return "u8"
	case wit.S8:
		return "s8"
	case wit.U16:
		return "u16"
	case wit.S16:
		return "s16"
	case wit.U32:
		return "u32"
	case wit.S32:
		return "s32"
	case wit.U64:
		return "u64"
	case wit.S64:
		return "s64"
	case wit.Char:
		return "char"
	case wit.String:
		return "string"
	}
	return ""
}

// resolve follows type aliases to the type whose layout they share.
func resolve(t wit.Type) wit.Type {
	for {
		td, ok := t.(*wit.TypeDef)
		if !ok {
			return t
		}
		kind, ok := td.Kind.(wit.Type)
		if !ok {
			return t
		}
		t = kind
	}
}

// goType is the Go type expression of a WIT type.
func (g *generator) goType(t wit.Type) string {
	if t == nil {
		return "Unit"
	}
	if p := primitiveName(t); p != "" {
		return primitives[p]
	}
	td, ok := t.(*wit.TypeDef)
	if !ok {
		g.fail("unsupported type %T", t)
		return "any"
	}
	if name, ok := g.names[td]; ok {
		return name
	}
	switch kind := td.Kind.(type) {
	case wit.Type:
		return g.goType(kind)
	case *wit.Option:
		return "*" + g.goType(kind.Type)
	case *wit.List:
		return "[]" + g.goType(kind.Type)
	case *wit.Tuple:
		g.tuples[len(kind.Types)] = true
		elems := make([]string, len(kind.Types))
		for i, e := range kind.Types {
			elems[i] = g.goType(e)
		}
		return fmt.Sprintf("Tuple%d[%s]", len(elems), strings.Join(elems, ", "))
	case *wit.Result:
		return fmt.Sprintf("Result[%s, %s]", g.goType(kind.OK), g.goType(kind.Err))
	}
	g.fail("unsupported type %s", td.Kind.WITKind())
	return "any"
}

// typeDecl writes the Go declaration of the named WIT type td.
func (g *generator) typeDecl(b *strings.Builder, td *wit.TypeDef) {
	name := g.names[td]
	switch kind := td.Kind.(type) {
	case wit.Type:
		b.WriteString(comment(fmt.Sprintf("%s is the WIT type %s.", name, td.TypeName()), td.Docs))
		fmt.Fprintf(b, "type %s = %s\n\n", name, g.goType(kind))
	case *wit.Record:
		b.WriteString(comment(fmt.Sprintf("%s is the WIT record %s.", name, td.TypeName()), td.Docs))
		fmt.Fprintf(b, "type %s struct {\n", name)
		for _, f := range kind.Fields {
			b.WriteString(comment(fmt.Sprintf("%s is the field %s.", goName(f.Name), f.Name), f.Docs))
			fmt.Fprintf(b, "%s %s\n", goName(f.Name), g.goType(f.Type))
		}
		b.WriteString("}\n\n")
	case *wit.Enum:
		b.WriteString(comment(fmt.Sprintf("%s is the WIT enum %s.", name, td.TypeName()), td.Docs))
		fmt.Fprintf(b, "type %s %s\n\n", name, primitives[primitiveName(wit.Discriminant(len(kind.Cases)))])
		g.cases(b, name, name, kind.Cases)
	case *wit.Variant:
		b.WriteString(comment(fmt.Sprintf("%s is the WIT variant %s: Case says which case it holds, "+
			"the field named after that case its payload.", name, td.TypeName()), td.Docs))
		fmt.Fprintf(b, "type %s struct {\n// Case is the case the value holds.\nCase %sCase\n", name, name)
		for _, c := range kind.Cases {
			if c.Type != nil {
				fmt.Fprintf(b, "// %s is the payload of %s%s.\n%s %s\n",
					goName(c.Name), name, goName(c.Name), goName(c.Name), g.goType(c.Type))
			}
		}
		b.WriteString("}\n\n")
		fmt.Fprintf(b, "// %sCase names a case of %s.\ntype %sCase %s\n\n", name, name, name,
			primitives[primitiveName(wit.Discriminant(len(kind.Cases)))])
		cases := make([]wit.EnumCase, len(kind.Cases))
		for i, c := range kind.Cases {
			cases[i] = wit.EnumCase{Name: c.Name, Docs: c.Docs}
		}
		g.cases(b, name+"Case", name, cases)
	default:
		b.WriteString(comment(fmt.Sprintf("%s is the WIT type %s.", name, td.TypeName()), td.Docs))
		fmt.Fprintf(b, "type %s = %s\n\n", name, g.anonymous(td))
	}
}

// anonymous is the Go type of a named WIT type whose definition has no name of its own, such as
// `type request = option<string>`.
func (g *generator) anonymous(td *wit.TypeDef) string {
	name := g.names[td]
	delete(g.names, td)
	defer func() { g.names[td] = name }()
	return g.goType(td)
}

// cases writes the constants naming the cases of an enum or variant.
func (g *generator) cases(b *strings.Builder, typ, prefix string, cases []wit.EnumCase) {
	b.WriteString("const (\n")
	for i, c := range cases {
		b.WriteString(comment(fmt.Sprintf("%s%s is the case %s.", prefix, goName(c.Name), c.Name), c.Docs))
		if i == 0 {
			fmt.Fprintf(b, "%s%s %s = iota\n", prefix, goName(c.Name), typ)
		} else {
			fmt.Fprintf(b, "%s%s\n", prefix, goName(c.Name))
		}
	}
	b.WriteString(")\n\n")
}
