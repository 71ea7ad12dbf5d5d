// The history fuzz target lives here, in checker's external test package,
// and not in history/: it checks what history.Read accepts with the
// checker, and history cannot import checker (checker imports history).
package checker_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
)

const (
	// fuzzMaxInput bounds a fuzz input (the seeds are at most 200 lines).
	fuzzMaxInput = 64 << 10
	// fuzzSeedLines truncates each corpus history used as a seed.
	fuzzSeedLines = 200
	// fuzzHang is how long Read and Check of one input may take before
	// the target calls it a hang: Check's porcupine checks stop at 200ms
	// each and the rest is milliseconds; the margin is wide so that a
	// loaded machine never makes it flaky.
	fuzzHang = 20 * time.Second
)

// fuzzHistories are small histories, valid and not, beside the corpus.
var fuzzHistories = []string{
	"",
	"\n\n",
	"{}",
	"not json\n",
	`{"seq":1,"t":0,"process":1,"type":"invoke","op":"acquire","key":"L","ttl":1000000000}` + "\n" +
		`{"seq":2,"t":5,"process":1,"type":"ok","op":"acquire","key":"L","token":"a","fence":1,"ttl":1000000000,"lease_end":1000000000}` + "\n" +
		`{"seq":3,"t":6,"process":1,"type":"invoke","op":"write","key":"L","token":"a","fence":1}` + "\n" +
		`{"seq":4,"t":9,"process":1,"type":"ok","op":"write","key":"L","read":0,"wrote":1}` + "\n",
	`{"seq":1,"t":0,"process":1,"type":"invoke","op":"acquire","key":"L"}` + "\n" +
		`{"seq":2,"t":0,"process":2,"type":"invoke","op":"acquire","key":"L"}` + "\n" +
		`{"seq":3,"t":1,"process":1,"type":"ok","op":"acquire","key":"L","token":"a"}` + "\n" +
		`{"seq":4,"t":1,"process":2,"type":"ok","op":"acquire","key":"L","token":"b"}` + "\n" +
		`{"seq":5,"t":2,"process":0,"type":"fault","op":"pause","target":"1"}` + "\n" +
		`{"seq":6,"t":3,"process":1,"type":"note","op":"renew","key":"L","reason":"not-held"}` + "\n" +
		`{"seq":7,"t":4,"process":1,"type":"fail","op":"crash"}` + "\n",
	`{"seq":1,"t":9223372036854775807,"process":2147483647,"type":"invoke","op":"extend","lease_end":9223372036854775807}` + "\n" +
		`{"seq":2,"t":9223372036854775807,"process":2147483647,"type":"info","op":"extend","ttl":-1}` + "\n",
	`{"seq":1,"t":0,"process":1,"type":"ok","op":"acquire"}` + "\n",
	`{"seq":1,"t":-1,"process":1,"type":"invoke","op":"acquire"}` + "\n",
	`{"seq":1,"t":0,"process":1,"type":"invoke","op":"acquire"}` + "\n" + `{"seq":1,"t":0,"process":1,"type":"ok","op":"acquire"}` + "\n",
}

var lineErr = regexp.MustCompile(`^line [1-9][0-9]*: `)

// FuzzReadCheck: history.Read never panics and names the line of what it
// refuses; a history it accepts gets a verdict from checker.Check, with no
// error (Read validated it) and no panic, and reads back the same after
// history.Write.
func FuzzReadCheck(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.jsonl"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no corpus histories to seed with (%v)", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		lines := strings.SplitAfter(string(data), "\n")
		if len(lines) > fuzzSeedLines {
			lines = lines[:fuzzSeedLines]
		}
		f.Add([]byte(strings.Join(lines, "")))
	}
	for _, h := range fuzzHistories {
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMaxInput {
			return
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			readCheck(t, data)
		}()
		select {
		case <-done:
		case <-time.After(fuzzHang):
			t.Fatalf("Read and Check still running after %v", fuzzHang)
		}
	})
}

// readCheck runs on its own goroutine: it reports with t.Errorf and
// returns, as t.Fatal must not be called from it.
func readCheck(t *testing.T, data []byte) {
	events, err := history.Read(bytes.NewReader(data))
	if err != nil {
		if !lineErr.MatchString(err.Error()) {
			t.Errorf("Read's error names no line: %q", err)
		}
		return
	}
	r, err := checker.Check(events, checker.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Errorf("Read accepted the history, Check refuses it: %v", err)
		return
	}
	switch r.Verdict {
	case checker.Safe, checker.Unsafe, checker.Leaked, checker.Unknown:
	default:
		t.Errorf("verdict %q", r.Verdict)
	}
	if r.Summary == "" {
		t.Errorf("verdict %s with no summary", r.Verdict)
	}
	var b1 bytes.Buffer
	if err := history.Write(&b1, events); err != nil {
		t.Errorf("Write: %v", err)
		return
	}
	again, err := history.Read(bytes.NewReader(b1.Bytes()))
	if err != nil {
		t.Errorf("Read refuses what Write wrote of a history it accepted: %v\n%s", err, b1.Bytes())
		return
	}
	var b2 bytes.Buffer
	if err := history.Write(&b2, again); err != nil || !bytes.Equal(b1.Bytes(), b2.Bytes()) {
		t.Errorf("Write, Read, Write changed the history (%v):\n%s\n---\n%s", err, b1.Bytes(), b2.Bytes())
	}
}
