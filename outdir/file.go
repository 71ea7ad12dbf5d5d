package outdir

// file.go: single-file outputs that may live anywhere (--junit,
// --markdown, --html FILE): locksim's own are known by a comment line in
// their content.

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Mark is the line that opens (after an XML declaration or a doctype) a
// file locksim wrote; a comment in XML, HTML and Markdown alike.
const Mark = "<!-- written by locksim -->"

// Marked returns data with Mark as its first line, or as its second when
// the first is an XML declaration or a doctype (which must come first).
func Marked(data []byte) []byte {
	head, rest := []byte{}, data
	if bytes.HasPrefix(data, []byte("<?xml")) || bytes.HasPrefix(bytes.ToLower(data), []byte("<!doctype")) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			head, rest = data[:i+1], data[i+1:]
		}
	}
	out := make([]byte, 0, len(data)+len(Mark)+1)
	out = append(out, head...)
	out = append(out, Mark+"\n"...)
	return append(out, rest...)
}

// isMarked says whether a file's content opens with Mark, on its first
// line or its second.
func isMarked(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for i := 0; i < 2 && sc.Scan(); i++ {
		if string(bytes.TrimSpace(sc.Bytes())) == Mark {
			return true
		}
	}
	return false
}

// CheckFile says whether locksim may write the file at path: a missing or
// empty file (GitHub creates $GITHUB_STEP_SUMMARY empty), or one locksim
// wrote; any other is a *RefusedError.
func CheckFile(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case st.IsDir():
		return &RefusedError{Path: path, Why: "a directory; name a file"}
	case !st.Mode().IsRegular() || st.Size() == 0:
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !isMarked(b) {
		return &RefusedError{Path: path, Why: "holds text locksim did not write (its first line is not " + Mark + "); name a new or empty file, or one locksim wrote"}
	}
	return nil
}

// WriteMarkedFile writes data, marked, to path once CheckFile allows it:
// a regular file through a temp name and a rename, anything else (a pipe,
// /dev/stdout) in place.
func WriteMarkedFile(path string, data []byte) error {
	if err := CheckFile(path); err != nil {
		return err
	}
	data = Marked(data)
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return os.WriteFile(path, data, 0o644)
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return writeAtomic(path, data)
}
