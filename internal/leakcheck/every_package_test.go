package leakcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestEveryPackageChecksForLeaks: every directory with tests has a TestMain that runs
// this check, directly (leakcheck.Main or Run) or through pgtest.Main, so a package
// added later cannot leave goroutines running unnoticed.
func TestEveryPackageChecksForLeaks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	hasTests := map[string]bool{}
	checked := map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		hasTests[dir] = true
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if runsLeakCheck(f) {
			checked[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for dir := range hasTests {
		if !checked[dir] {
			missing = append(missing, dir)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("packages whose TestMain does not check for leaked goroutines (add "+
			"`func TestMain(m *testing.M) { leakcheck.Main(m) }`, or pgtest.Main(m) when the tests use a database):\n%s",
			strings.Join(missing, "\n"))
	}
	if len(checked) < 30 {
		t.Fatalf("found %d packages that check for leaks: is the walk looking at the repository?", len(checked))
	}
}

// runsLeakCheck reports whether f declares a TestMain that calls leakcheck.Main or Run,
// or pgtest.Main (or, in this package, Main).
func runsLeakCheck(f *ast.File) bool {
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Name.Name != "TestMain" || fn.Body == nil {
			continue
		}
		found := false
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fun := call.Fun.(type) {
			case *ast.SelectorExpr:
				if pkg, ok := fun.X.(*ast.Ident); ok {
					switch pkg.Name + "." + fun.Sel.Name {
					case "leakcheck.Main", "leakcheck.Run", "pgtest.Main":
						found = true
					}
				}
			case *ast.Ident:
				found = found || (f.Name.Name == "leakcheck" || f.Name.Name == "pgtest") && fun.Name == "Main"
			}
			return !found
		})
		return found
	}
	return false
}
