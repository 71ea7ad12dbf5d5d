package outdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// put writes files (name: content; a name ending in / is a directory)
// under dir.
func put(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// claimed makes a run directory of locksim's holding result.json and a
// counterfactual/ with its own result.json.
func claimed(t *testing.T, dir string) {
	t.Helper()
	d, err := Claim(dir, Run, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile("result.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	cf, err := d.Sub("counterfactual", Run, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := cf.WriteFile("result.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
}

func TestClaim(t *testing.T) {
	cases := []struct {
		name string
		// setup prepares dir (nil: dir is not there).
		setup func(t *testing.T, dir string)
		kind  Kind
		// refused is the entry the refusal names ("": accepted).
		refused string
	}{
		{"new", nil, Run, ""},
		{"empty", func(t *testing.T, dir string) { put(t, dir, map[string]string{"./": ""}) }, Run, ""},
		{"locksim's", claimed, Run, ""},
		{"user's result.json", func(t *testing.T, dir string) { put(t, dir, map[string]string{"result.json": "mine"}) }, Run, "holds result.json, which locksim did not write"},
		{"user's notes added later", func(t *testing.T, dir string) {
			claimed(t, dir)
			put(t, dir, map[string]string{"notes.txt": "mine"})
		}, Run, "holds notes.txt, which locksim did not write"},
		{"user's file in a subdirectory", func(t *testing.T, dir string) {
			claimed(t, dir)
			put(t, dir, map[string]string{"counterfactual/notes.txt": "mine"})
		}, Run, "holds counterfactual/notes.txt, which locksim did not write"},
		{"a temp file of locksim's", func(t *testing.T, dir string) {
			claimed(t, dir)
			put(t, dir, map[string]string{".result.json.tmp-123": "half"})
		}, Run, ""},
		{"a temp-looking file of an unlisted name", func(t *testing.T, dir string) {
			claimed(t, dir)
			put(t, dir, map[string]string{".notes.txt.tmp-123": "mine"})
		}, Run, "holds .notes.txt.tmp-123"},
		{"another kind", claimed, Sweep, "holds locksim's run output, not a sweep"},
		{"a broken marker", func(t *testing.T, dir string) { put(t, dir, map[string]string{MarkerName: "mine"}) }, Run, "cannot read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if c.setup != nil {
				c.setup(t, dir)
			}
			before := snapshot(t, dir)
			checkErr := Check(dir, c.kind)
			_, err := Claim(dir, c.kind, "again")
			if c.refused == "" {
				if err != nil || checkErr != nil {
					t.Fatalf("refused: %v / %v", checkErr, err)
				}
				if _, err := os.Stat(filepath.Join(dir, MarkerName)); err != nil {
					t.Fatalf("no marker: %v", err)
				}
				return
			}
			var r *RefusedError
			if !errors.As(err, &r) || !strings.Contains(err.Error(), c.refused) || !strings.HasPrefix(err.Error(), dir+": ") {
				t.Fatalf("Claim: %v, want a refusal of %s naming %q", err, dir, c.refused)
			}
			if checkErr == nil || checkErr.Error() != err.Error() {
				t.Fatalf("Check: %v, Claim: %v", checkErr, err)
			}
			if after := snapshot(t, dir); after != before {
				t.Fatalf("a refusal changed the directory:\n%s\nnow\n%s", before, after)
			}
		})
	}
}

// snapshot lists every file under dir with its content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s: %q\n", p, c)
		}
		return nil
	})
	return b.String()
}

// TestSubdirIsListed: a claimed subdirectory is listed in its parent's
// marker, and RemoveAll takes it off.
func TestSubdirIsListed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	d, err := Claim(dir, Runs, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Sub("run-1", Run, "test"); err != nil {
		t.Fatal(err)
	}
	if m, _ := readMarker(dir); fmt.Sprint(m.Entries) != "[run-1]" {
		t.Fatalf("entries %v, want [run-1]", m.Entries)
	}
	if err := RemoveAll(filepath.Join(dir, "run-1")); err != nil {
		t.Fatal(err)
	}
	if m, _ := readMarker(dir); len(m.Entries) != 0 {
		t.Fatalf("entries %v after RemoveAll", m.Entries)
	}
	put(t, dir, map[string]string{"mine/notes.txt": "mine"})
	if err := RemoveAll(filepath.Join(dir, "mine")); err == nil {
		t.Fatal("RemoveAll removed a directory locksim did not make")
	}
}

// TestConcurrentWritesKeepEveryEntry: writers in parallel lose no entry
// of the marker.
func TestConcurrentWritesKeepEveryEntry(t *testing.T) {
	dir := t.TempDir()
	d, err := Claim(dir, Sweep, "test")
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 0 {
				if err := d.WriteFile(fmt.Sprintf("f-%02d", i), []byte("x")); err != nil {
					t.Error(err)
				}
				return
			}
			f, err := d.Create(fmt.Sprintf("f-%02d", i))
			if err != nil {
				t.Error(err)
				return
			}
			f.Close()
		}(i)
	}
	wg.Wait()
	m, err := readMarker(dir)
	if err != nil || len(m.Entries) != n {
		t.Fatalf("%d entries (%v), want %d", len(m.Entries), err, n)
	}
	if _, err := Claim(dir, Sweep, "again"); err != nil {
		t.Fatalf("locksim's own directory refused: %v", err)
	}
}

// TestMarkedFile: a single-file output (--junit FILE) goes onto a missing
// or empty file or one locksim wrote, never onto the user's.
func TestMarkedFile(t *testing.T) {
	const junit = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites></testsuites>\n"
	cases := []struct {
		name     string
		existing *string // nil: no file
		refused  bool
	}{
		{"missing", nil, false},
		{"empty", ptr(""), false},
		{"locksim's", ptr(string(Marked([]byte(junit)))), false},
		{"user's", ptr("<testsuites>mine</testsuites>\n"), true},
		{"user's with the mark further down", ptr("mine\nmore\n" + Mark + "\n"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "junit.xml")
			if c.existing != nil {
				put(t, filepath.Dir(path), map[string]string{"junit.xml": *c.existing})
			}
			err := WriteMarkedFile(path, []byte(junit))
			got, _ := os.ReadFile(path)
			if c.refused {
				if err == nil || !strings.HasPrefix(err.Error(), path+": holds text locksim did not write") {
					t.Fatalf("err %v, want a refusal", err)
				}
				if string(got) != *c.existing {
					t.Fatalf("the user's file changed: %q", got)
				}
				return
			}
			want := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + Mark + "\n<testsuites></testsuites>\n"
			if err != nil || string(got) != want {
				t.Fatalf("err %v, wrote %q, want %q", err, got, want)
			}
		})
	}
}

func ptr(s string) *string { return &s }
