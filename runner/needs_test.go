package runner

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// EnvAllowSkip, set to 1, lets a test skip when a program outside Go (node,
// python3, java) is missing, for a developer's machine without it. CI
// (CI=true) never skips: make test-deps installs every program, and one
// missing there is a failure, not a quiet pass.
const EnvAllowSkip = "LOCKSIM_ALLOW_SKIP"

// missingProgram ends the test when a program it needs is not installed:
// a skip where EnvAllowSkip=1 and not in CI, a failure everywhere else,
// naming what to install.
func missingProgram(t *testing.T, what string, err error) {
	t.Helper()
	if os.Getenv(EnvAllowSkip) == "1" && os.Getenv("CI") != "true" {
		t.Skipf("%s: %v (%s=1: skipped)", what, err, EnvAllowSkip)
	}
	t.Fatalf("%s: %v; make test-deps installs it (%s=1 skips this test outside CI)", what, err, EnvAllowSkip)
}

// TestMissingProgram plays a test that needs a program this machine lacks,
// as go test runs it: it fails by default and in CI even with the skip
// allowed, and skips only with EnvAllowSkip=1 outside CI.
func TestMissingProgram(t *testing.T) {
	if os.Getenv("LOCKSIM_MISSING_PROGRAM_HELPER") == "1" {
		_, err := exec.LookPath("locksim-no-such-program")
		missingProgram(t, "locksim-no-such-program is not installed", err)
		return
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"CI=", EnvAllowSkip + "="}, "--- FAIL"},
		{[]string{"CI=true", EnvAllowSkip + "=1"}, "--- FAIL"},
		{[]string{"CI=", EnvAllowSkip + "=1"}, "--- SKIP"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingProgram$", "-test.v")
		cmd.Env = append(append(os.Environ(), "LOCKSIM_MISSING_PROGRAM_HELPER=1"), c.env...)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), c.want) || !strings.Contains(string(out), "make test-deps") && c.want == "--- FAIL" {
			t.Errorf("%v: want %s naming make test-deps:\n%s", c.env, c.want, out)
		}
	}
}
