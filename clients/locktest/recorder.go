// recorder.go is the testing.TB that Run gives each check: it records the
// check's failure, skip and log instead of failing its parent.

package locktest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recorder is a testing.TB that records instead of failing its parent.
// The embedded parent supplies what a recorder has no use to change
// (TempDir, Context, Setenv...) and testing.TB's unexported method.
type recorder struct {
	testing.TB
	name string

	mu       sync.Mutex
	failed   bool
	skipped  bool
	logs     []string
	cleanups []func()
}

// do runs f in its own goroutine, so FailNow and SkipNow can end it.
func (r *recorder) do(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				r.Errorf("panic: %v", p)
			}
		}()
		f()
	}()
	<-done
}

func (r *recorder) runCleanups() {
	for {
		r.mu.Lock()
		if len(r.cleanups) == 0 {
			r.mu.Unlock()
			return
		}
		f := r.cleanups[len(r.cleanups)-1]
		r.cleanups = r.cleanups[:len(r.cleanups)-1]
		r.mu.Unlock()
		r.do(f)
	}
}

func (r *recorder) log(s string) {
	r.mu.Lock()
	r.logs = append(r.logs, strings.TrimSuffix(s, "\n"))
	r.mu.Unlock()
}

func (r *recorder) Name() string            { return r.name }
func (r *recorder) Helper()                 {}
func (r *recorder) Cleanup(f func())        { r.mu.Lock(); r.cleanups = append(r.cleanups, f); r.mu.Unlock() }
func (r *recorder) Fail()                   { r.mu.Lock(); r.failed = true; r.mu.Unlock() }
func (r *recorder) FailNow()                { r.Fail(); runtime.Goexit() }
func (r *recorder) Failed() bool            { r.mu.Lock(); defer r.mu.Unlock(); return r.failed }
func (r *recorder) Log(args ...any)         { r.log(fmt.Sprintln(args...)) }
func (r *recorder) Logf(f string, a ...any) { r.log(fmt.Sprintf(f, a...)) }
func (r *recorder) Error(args ...any)       { r.Log(args...); r.Fail() }
func (r *recorder) Errorf(f string, a ...any) {
	r.Logf(f, a...)
	r.Fail()
}
func (r *recorder) Fatal(args ...any)         { r.Log(args...); r.FailNow() }
func (r *recorder) Fatalf(f string, a ...any) { r.Logf(f, a...); r.FailNow() }
func (r *recorder) SkipNow()                  { r.mu.Lock(); r.skipped = true; r.mu.Unlock(); runtime.Goexit() }
func (r *recorder) Skip(args ...any)          { r.Log(args...); r.SkipNow() }
func (r *recorder) Skipf(f string, a ...any)  { r.Logf(f, a...); r.SkipNow() }
func (r *recorder) Skipped() bool             { r.mu.Lock(); defer r.mu.Unlock(); return r.skipped }
