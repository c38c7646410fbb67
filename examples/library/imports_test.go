package main

import (
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// The example shows what a program in another module can do, so it may
// use nothing from this module's internal packages.
func TestUsesOnlyThePublicAPI(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if strings.Contains(path, "/internal/") {
			t.Errorf("main.go imports %s", path)
		}
	}
}
