// Package locksim_test holds the tests of what locksim promises its
// users outside this module: the plug-in contract (docs/plugins.md) as a
// team's own module uses it, and the Go snippets of README.md and docs/,
// each compiled. Both build with the go toolchain as a team's build does:
// from the module cache, reaching the module proxy only for what the cache
// lacks (the go.mod files of modules locksim's own build never needs).
package locksim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// block is one ```go block of a Markdown file: its code and the line of
// the file its first line of code is on.
type block struct {
	file string
	line int
	code string
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// pkg is the block's package clause ("" for a fragment).
func (b block) pkg() string {
	m := regexp.MustCompile(`(?m)^package (\w+)`).FindStringSubmatch(b.code)
	if m == nil {
		return ""
	}
	return m[1]
}

// goBlocks lists the ```go blocks of a Markdown file, each unindented by
// its fence's indentation (a block in a list item).
func goBlocks(t *testing.T, file string) []block {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		indent, rest, _ := strings.Cut(lines[i], "```go")
		if strings.TrimSpace(indent) != "" || strings.TrimSpace(rest) != "" || !strings.Contains(lines[i], "```go") {
			continue
		}
		b := block{file: file, line: i + 2}
		var code []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			code = append(code, strings.TrimPrefix(lines[i], indent))
		}
		b.code = strings.Join(code, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// elided replaces a snippet's placeholders, `{ ... }` and a line that is
// only `...`, with a panic, so that what the snippet leaves out compiles.
func elided(code string) string {
	code = strings.ReplaceAll(code, "{ ... }", `{ panic("elided") }`)
	return regexp.MustCompile(`(?m)^(\s*)\.\.\.$`).ReplaceAllString(code, `${1}panic("elided")`)
}

// repoRoot is this module's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goCmd is the go command run in dir as a team's build runs it: the
// module cache first, the module proxy (GOPROXY as set) only for what the
// cache lacks, no toolchain download, requirements added as needed. A team
// module needs the go.mod files of modules that locksim's own (pruned)
// build never downloads, so a fresh machine's cache lacks them; with a
// full cache nothing is fetched. The sums come from this module's go.sum.
func goCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOTOOLCHAIN=local", "GOWORK=off")
	return cmd
}

// userModule makes a module outside this one, as a team's repository
// would be: it requires github.com/locksim/locksim, replaced by this
// checkout, with this module's go.sum.
func userModule(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds a module with the go toolchain (about 20 s)")
	}
	dir := t.TempDir()
	mod := fmt.Sprintf("module example.com/team\n\ngo 1.26.0\n\nrequire github.com/locksim/locksim v0.0.0\n\nreplace github.com/locksim/locksim => %s\n", repoRoot(t))
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// write writes a file under dir, making its directory.
func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPluginModule builds the plug-in of docs/plugins.md (its first
// `package main` block: a lock and the main that registers it and runs
// cli.Main) in a module of its own, as a team would, and runs it: sim
// locks lists the lock, and a story file that names it loads.
func TestPluginModule(t *testing.T) {
	dir := userModule(t)
	var prog *block
	for _, b := range goBlocks(t, "docs/plugins.md") {
		if b.pkg() == "main" {
			prog = &b
			break
		}
	}
	if prog == nil {
		t.Fatal("docs/plugins.md has no package main block")
	}
	write(t, filepath.Join(dir, "main.go"), prog.code)
	bin := filepath.Join(dir, "sim")
	if out, err := goCmd(dir, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building %s in a module of its own: %v\n%s", prog, err, out)
	}
	out, err := exec.Command(bin, "locks").CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^my-lock +redis `).Match(out) {
		t.Fatalf("sim locks: %v; my-lock is not listed:\n%s", err, out)
	}
	story := filepath.Join(dir, "mine.yaml")
	write(t, story, "name: mine\ntitle: my lock, two clients\nsource: none\nexplain: A test.\nlock: my-lock\nexpected: safe\n"+
		"steps:\n  - do: acquire\n    client: 1\n  - do: acquire\n    client: 2\n    expect: refused\n")
	if out, err := exec.Command(bin, "explain", story).CombinedOutput(); err != nil || !strings.Contains(string(out), "my-lock") {
		t.Fatalf("sim explain %s: %v\n%s", story, err, out)
	}
}

// TestDocSnippetsCompile compiles every ```go block of README.md and
// docs/*.md. A block is one of three kinds:
//
//   - a package of this module (package nemesis, package backends): built
//     as one more file of that package, so it may use the package's own
//     names; when it declares a type the package has, it stands for that
//     type's declarations (its file keeps the rest);
//   - any other package (package main): a file of a team's module;
//   - a fragment, with no package clause: top-level declarations in a
//     team's module, the packages it names imported; a name it leaves
//     undefined and unqualified (newMyLock) is the reader's own code.
//
// In all three, `{ ... }` and a line `...` are placeholders, built as a
// panic.
func TestDocSnippetsCompile(t *testing.T) {
	dir := userModule(t)
	root := repoRoot(t)
	docs, _ := filepath.Glob("docs/*.md")
	var blocks []block
	for _, f := range append([]string{"README.md"}, docs...) {
		blocks = append(blocks, goBlocks(t, f)...)
	}
	if len(blocks) < 5 {
		t.Fatalf("found %d go blocks in README.md and docs/, want at least 5", len(blocks))
	}
	type placed struct {
		block
		at       func(int) int
		fragment bool
	}
	files := map[string]placed{} // by the path go build names
	ours := map[string][]int{}   // a package of this module: its blocks
	for i, b := range blocks {
		p := b.pkg()
		src, at := withImports(root, fmt.Sprintf("s%d", i), elided(b.code))
		switch {
		case p != "" && isOurPackage(root, p):
			ours[p] = append(ours[p], i)
		default:
			path := fmt.Sprintf("snippets/s%d/s.go", i)
			write(t, filepath.Join(dir, path), src)
			files[path] = placed{b, at, p == ""}
		}
	}
	report := func(out []byte, where string) {
		for _, msg := range compileErrors(out) {
			f, ok := files[msg.path]
			switch {
			case !ok:
				t.Errorf("%s: %s", where, msg.raw)
			case f.fragment && regexp.MustCompile(`^undefined: [a-z]\w*$`).MatchString(msg.text):
				// the reader's own code
			default:
				t.Errorf("%s:%d: %s", f.file, f.line+f.at(msg.line)-1, msg.text)
			}
		}
	}
	out, _ := goCmd(dir, "build", "./...").CombinedOutput()
	report(out, "a team's module")
	for p, idx := range ours {
		overlay := map[string]string{}
		for _, i := range idx {
			b := blocks[i]
			src, at := withImports(root, p, elided(b.code))
			tmp := filepath.Join(t.TempDir(), "snippet.go")
			write(t, tmp, src)
			overlay[filepath.Join(root, p, fmt.Sprintf("zz_doc_snippet_%d.go", i))] = tmp
			files[tmp] = placed{b, at, false}
			for file, kept := range standsFor(t, filepath.Join(root, p), src) {
				tmp := filepath.Join(t.TempDir(), "kept.go")
				write(t, tmp, kept)
				overlay[file] = tmp
			}
		}
		js, _ := json.Marshal(map[string]any{"Replace": overlay})
		ov := filepath.Join(t.TempDir(), "overlay.json")
		write(t, ov, string(js))
		out, _ := goCmd(root, "build", "-overlay", ov, "./"+p).CombinedOutput()
		report(out, "package "+p+" with its snippets")
	}
}

// isOurPackage says whether this module has a package p in a directory
// of that name.
func isOurPackage(root, p string) bool {
	files, _ := filepath.Glob(filepath.Join(root, p, "*.go"))
	return len(files) > 0
}

// stdlib are the standard packages a snippet may name without an import.
var stdlib = []string{"context", "errors", "fmt", "os", "strings", "sync", "testing", "time"}

// withImports is the snippet's file: a fragment made package p, and,
// when it has no imports of its own, the packages it names (this
// module's but its own, and stdlib's) imported on one line after its
// package clause. at maps a line of the file to the snippet's.
func withImports(root, p, code string) (src string, at func(int) int) {
	added := 0
	if !regexp.MustCompile(`(?m)^package \w+`).MatchString(code) {
		code, added = "package "+p+"\n"+code, 1
	}
	m := regexp.MustCompile(`(?m)^package (\w+)\n`).FindStringSubmatchIndex(code)
	self, pkgLine := code[m[2]:m[3]], strings.Count(code[:m[1]], "\n")
	var imports []string
	used := qualifiers(code)
	for _, s := range stdlib {
		if used(s) {
			imports = append(imports, strconv.Quote(s))
		}
	}
	dirs, _ := os.ReadDir(root)
	for _, d := range dirs {
		if d.IsDir() && d.Name() != self && isOurPackage(root, d.Name()) && used(d.Name()) {
			imports = append(imports, strconv.Quote("github.com/locksim/locksim/"+d.Name()))
		}
	}
	if used("locktest") {
		imports = append(imports, strconv.Quote("github.com/locksim/locksim/clients/locktest"))
	}
	if len(imports) == 0 || regexp.MustCompile(`(?m)^import`).MatchString(code) {
		return code, func(l int) int { return l - added }
	}
	src = code[:m[1]] + "import (" + strings.Join(imports, "; ") + ")\n" + code[m[1]:]
	return src, func(l int) int {
		if l > pkgLine {
			l--
		}
		return l - added
	}
}

// qualifiers says which names the Go code qualifies (name.X): the
// packages it uses, outside its comments and strings.
func qualifiers(code string) func(string) bool {
	seen := map[string]bool{}
	fset := token.NewFileSet()
	var sc scanner.Scanner
	sc.Init(fset.AddFile("", fset.Base(), len(code)), []byte(code), nil, 0)
	last := ""
	for {
		_, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.PERIOD && last != "" {
			seen[last] = true
		}
		last = ""
		if tok == token.IDENT {
			last = lit
		}
	}
	return func(name string) bool { return seen[name] }
}

// compileError is one line of the go command's errors.
type compileError struct {
	path      string
	line      int
	text, raw string
}

// compileErrors parses go build's output into its errors.
func compileErrors(out []byte) []compileError {
	var errs []compileError
	re := regexp.MustCompile(`^(?:\./)?([^\s:]+\.go):(\d+)(?::\d+)?: (.*)$`)
	for _, l := range strings.Split(string(out), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			errs = append(errs, compileError{m[1], n, m[3], l})
		} else if l != "" && !strings.HasPrefix(l, "#") {
			errs = append(errs, compileError{raw: l, text: l})
		}
	}
	return errs
}

// standsFor finds the files of the package in dir that declare a type (or
// a function) the snippet code declares, and returns each with those
// declarations, their methods and its then unused imports removed: the
// snippet stands for them.
func standsFor(t *testing.T, dir, code string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	snip, err := parser.ParseFile(fset, "snippet.go", code, 0)
	if err != nil {
		return nil // the build says where
	}
	declared := map[string]bool{}
	for _, d := range snip.Decls {
		for _, n := range declNames(d) {
			declared[n] = true
		}
	}
	out := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		kept := f.Decls[:0:0]
		for _, d := range f.Decls {
			if !slices.ContainsFunc(declNames(d), func(n string) bool { return declared[n] }) {
				kept = append(kept, d)
			}
		}
		if len(kept) == len(f.Decls) {
			continue
		}
		f.Decls, f.Comments = pruneImports(kept), nil
		var buf bytes.Buffer
		if err := format.Node(&buf, fset, f); err != nil {
			t.Fatal(err)
		}
		out[file] = buf.String()
	}
	return out
}

// declNames are the names a declaration declares that a snippet may
// stand for: its types, its functions (init too) and, for a method, its
// receiver's type.
func declNames(d ast.Decl) []string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) > 0 {
			typ := d.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				return []string{id.Name}
			}
			return nil
		}
		return []string{d.Name.Name}
	case *ast.GenDecl:
		var out []string
		for _, s := range d.Specs {
			if ts, ok := s.(*ast.TypeSpec); ok {
				out = append(out, ts.Name.Name)
			}
		}
		return out
	}
	return nil
}

// pruneImports drops from decls the imports none of the others use.
func pruneImports(decls []ast.Decl) []ast.Decl {
	used := map[string]bool{}
	for _, d := range decls {
		ast.Inspect(d, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := s.X.(*ast.Ident); ok {
					used[id.Name] = true
				}
			}
			return true
		})
	}
	var out []ast.Decl
	for _, d := range decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			out = append(out, d)
			continue
		}
		var specs []ast.Spec
		for _, s := range g.Specs {
			is := s.(*ast.ImportSpec)
			path, _ := strconv.Unquote(is.Path.Value)
			name := filepath.Base(path)
			if is.Name != nil {
				name = is.Name.Name
			}
			if strings.HasPrefix(name, "v") && len(name) <= 3 { // a major version suffix: go.yaml.in/yaml/v3
				name = filepath.Base(filepath.Dir(path))
			}
			if used[name] || name == "_" {
				specs = append(specs, s)
			}
		}
		if len(specs) > 0 {
			g.Specs = specs
			out = append(out, g)
		}
	}
	return out
}
