package mapper_test

import (
	"fmt"
	"go/types"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestAPINamesNoInternalType type-checks packages mapper and vocab and
// fails if anything they export (a function, method, field, type,
// constant or variable) names a type of an internal package, which a
// program in another module could not name.
func TestAPINamesNoInternalType(t *testing.T) {
	public := []string{"github.com/pi-otel/pi-otel/mapper", "github.com/pi-otel/pi-otel/mapper/vocab"}
	pkgs := load(t, append(public, "github.com/pi-otel/pi-otel/internal/rpc")...)
	for i := range public {
		for _, leak := range internalNames(pkgs[i].Types) {
			t.Errorf("%s exports an internal type: %s", public[i], leak)
		}
	}
	// The walk finds what it looks for: internal/rpc's API names the
	// decoder's event types.
	if leaks := internalNames(pkgs[len(public)].Types); len(leaks) == 0 {
		t.Error("no internal type found in internal/rpc's API; the check is blind")
	}
}

func load(t *testing.T, paths ...string) []*packages.Package {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes}
	pkgs, err := packages.Load(cfg, paths...)
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 || len(pkgs) != len(paths) {
		t.Fatalf("loading %v failed", paths)
	}
	byPath := map[string]*packages.Package{}
	for _, p := range pkgs {
		byPath[p.PkgPath] = p
	}
	out := make([]*packages.Package, len(paths))
	for i, p := range paths {
		out[i] = byPath[p]
	}
	return out
}

// internalNames lists, as "identifier: type", each exported identifier of
// pkg whose type names a type from an internal package.
func internalNames(pkg *types.Package) []string {
	var leaks []string
	report := func(what string, typ types.Type) {
		if n := internalIn(typ, map[types.Type]bool{}); n != "" {
			leaks = append(leaks, fmt.Sprintf("%s: %s", what, n))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		tn, ok := obj.(*types.TypeName)
		if !ok {
			report(name, obj.Type()) // a function, constant or variable
			continue
		}
		if tn.IsAlias() {
			report(name, tn.Type())
			continue
		}
		switch u := tn.Type().Underlying().(type) {
		case *types.Struct:
			for f := range u.Fields() {
				if f.Exported() {
					report(name+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for m := range u.Methods() {
				if m.Exported() {
					report(name+"."+m.Name(), m.Type())
				}
			}
		default:
			report(name, u)
		}
		for _, recv := range []types.Type{tn.Type(), types.NewPointer(tn.Type())} {
			ms := types.NewMethodSet(recv)
			for sel := range ms.Methods() {
				if sel.Obj().Exported() {
					report(name+"."+sel.Obj().Name(), sel.Type())
				}
			}
		}
	}
	return leaks
}

// internalIn returns the first named type from an internal package that
// typ is or is built from, or "". Named types from public packages are
// their own API and are not entered.
func internalIn(typ types.Type, seen map[types.Type]bool) string {
	if seen[typ] {
		return ""
	}
	seen[typ] = true
	switch t := typ.(type) {
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && isInternal(p.Path()) {
			return t.String()
		}
		for a := range t.TypeArgs().Types() {
			if n := internalIn(a, seen); n != "" {
				return n
			}
		}
	case *types.Alias:
		return internalIn(types.Unalias(t), seen)
	case *types.Pointer:
		return internalIn(t.Elem(), seen)
	case *types.Slice:
		return internalIn(t.Elem(), seen)
	case *types.Array:
		return internalIn(t.Elem(), seen)
	case *types.Chan:
		return internalIn(t.Elem(), seen)
	case *types.Map:
		if n := internalIn(t.Key(), seen); n != "" {
			return n
		}
		return internalIn(t.Elem(), seen)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tup.Variables() {
				if n := internalIn(v.Type(), seen); n != "" {
					return n
				}
			}
		}
	case *types.Struct:
		for f := range t.Fields() {
			if n := internalIn(f.Type(), seen); n != "" {
				return n
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if n := internalIn(m.Type(), seen); n != "" {
				return n
			}
		}
	}
	return ""
}

func isInternal(path string) bool {
	return strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") ||
		strings.HasSuffix(path, "/internal")
}
