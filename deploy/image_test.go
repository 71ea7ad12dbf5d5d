package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
)

// simImage is the locksim image docker/build-images makes.
const simImage = "locksim/sim:bookworm"

// needImage fails the test unless the engine has the locksim image
// (make test runs make docker, which builds it, first).
func needImage(tb *testing.T) {
	tb.Helper()
	if out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", simImage).CombinedOutput(); err != nil {
		tb.Fatalf("%s: %v: %s(make docker builds it)", simImage, err, out)
	}
}

// inImage runs sim in a container of the locksim image with runs mounted
// at /runs, as the README says, and returns its exit code and output. The
// container shares the host's network, as the README's commands do: the
// servers bind 127.0.0.1 on free ports as local processes would, and
// docker need not make a network namespace (about a second a run on this
// machine, when busy). The
// files it writes belong to the container's root; for a test run as
// another user they are given back to that user.
func inImage(t testing.TB, runs string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("docker", append([]string{"run", "--rm", "--network", "host", "-v", runs + ":/runs", simImage}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("docker run: %v", err)
	}
	if uid := os.Getuid(); uid != 0 {
		own := strconv.Itoa(uid) + ":" + strconv.Itoa(os.Getgid())
		exec.Command("docker", "run", "--rm", "-v", runs+":/runs", "--entrypoint", "chown", simImage, "-R", own, "/runs").Run()
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// TestImage plays one story and one 2x2 sweep with sim inside the locksim
// image, and reads what they wrote on the host: redlock-clock-jump needs
// the clock shim preloaded into redis-server (without it the jump does
// nothing and the story ends safe), and the sweep compares Redis with a
// PostgreSQL session lock, which sim, root in the container, starts as
// the image's postgres user.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a docker engine and the locksim image")
	}
	needImage(t)
	runs := t.TempDir()
	if code, out := inImage(t, runs, "run", "redlock-clock-jump", "--out", "/runs/story"); code != 0 {
		t.Fatalf("sim run redlock-clock-jump in the image: exit %d (0: the verdict expected)\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(runs, "story", "result.json"))
	if err != nil {
		t.Fatalf("result.json on the host: %v", err)
	}
	var r struct {
		Verdict  checker.Verdict `json:"verdict"`
		Expected checker.Verdict `json:"expected"`
		Backend  string          `json:"backend"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != "unsafe" || r.Expected != "unsafe" {
		t.Errorf("redlock-clock-jump in the image: verdict %q, expected %q; want unsafe (the clock shim at work)", r.Verdict, r.Expected)
	}
	code, out := inImage(t, runs, "sweep", "gen-pause", "--param", "pause=0.3ttl..3ttl", "--points", "2", "--trials", "2",
		"--ttl", "300ms", "--duration", "360ms", "--seed", "5", "--locks", "redis,postgres-session", "-q", "--out", "/runs/sweep")
	if code != 0 {
		t.Fatalf("sim sweep in the image: exit %d\n%s", code, out)
	}
	rows := readCSV(t, filepath.Join(runs, "sweep"), "sweep.csv")
	var locks []string
	for _, row := range rows {
		if row["trials"] != "2" || row["trials_unknown"] != "0" {
			t.Errorf("sweep.csv: %s at %s: %s trials, %s unknown; want 2 decided", row["lock"], row["value"], row["trials"], row["trials_unknown"])
		}
		if !slices.Contains(locks, row["lock"]) {
			locks = append(locks, row["lock"])
		}
	}
	if len(rows) != 4 || strings.Join(locks, ",") != "redis,postgres-session" {
		t.Errorf("sweep.csv: %d rows of %v; want 2 points of redis and postgres-session", len(rows), locks)
	}
	for _, f := range []string{"sweep.json", "damage.png", "violations.svg"} {
		if fi, err := os.Stat(filepath.Join(runs, "sweep", f)); err != nil || fi.Size() == 0 {
			t.Errorf("the sweep wrote no %s on the host: %v", f, err)
		}
	}
}

// BenchmarkImageColdRun times a cold sim run redlock-clock-jump (a new
// process that starts its servers) with sim and the servers in a container
// of the locksim image (docker run included) and as local processes,
// alternately, and reports the median of each and their ratio (target:
// 1.5 or less). make bench: -benchtime 5x.
func BenchmarkImageColdRun(b *testing.B) {
	if err := exec.Command("docker", "image", "inspect", simImage).Run(); err != nil {
		b.Skipf("%s: %v (make docker builds it)", simImage, err)
	}
	bin, runs := sim(b), b.TempDir()
	var image, local []float64
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if code, out := inImage(b, runs, "run", "redlock-clock-jump", "-q", "--out", "/runs/image-"+strconv.Itoa(i)); code != 0 {
			b.Fatalf("in the image: exit %d\n%s", code, out)
		}
		image = append(image, time.Since(start).Seconds())
		start = time.Now()
		cmd := exec.Command(bin, "run", "redlock-clock-jump", "-q", "--out", filepath.Join(runs, "local-"+strconv.Itoa(i)))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("local: %v\n%s", err, out)
		}
		local = append(local, time.Since(start).Seconds())
	}
	median := func(s []float64) float64 { s = slices.Clone(s); slices.Sort(s); return s[len(s)/2] }
	b.ReportMetric(median(image), "s/image-run")
	b.ReportMetric(median(local), "s/local-run")
	b.ReportMetric(median(image)/median(local), "image/local")
	b.ReportMetric(0, "ns/op")
}
