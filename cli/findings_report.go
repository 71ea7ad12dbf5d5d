// findings_report.go: `sim findings --report NAME`, each finding the
// page lists about one lock, played again n times beside its reference
// and written as an issue its maintainer can act on
// (docs/findings/NAME.md).
package cli

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/findings"
	"github.com/locksim/locksim/matrix"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/scenarios"
)

// DefaultReportRepeat is how many times --report plays each finding.
const DefaultReportRepeat = 5

// cmdFindingsReport plays each finding about subject name (a finding
// cell of the page, and the hunt's shrunk story) o.repeat times with its
// reference, and writes what the runs showed as issues.
func cmdFindingsReport(ctx context.Context, o findingsOptions, stdout, stderr io.Writer) error {
	if o.repeat < 1 {
		return fmt.Errorf("--repeat: expected 1 or more, got %d", o.repeat)
	}
	base := strings.TrimSuffix(o.doc, ".md")
	report, err := findings.Load(base + ".json")
	if err != nil {
		return asFlag("--doc", err)
	}
	if len(report.Subjects) == 0 {
		return fmt.Errorf("--report %s: %s.json lists no lock: sim findings (--doc %s) writes it first", o.report, base, o.doc)
	}
	subs, err := reportSubjects(report, o.report)
	if err != nil {
		return err
	}
	for _, sub := range subs {
		so := o
		if len(subs) > 1 && o.out != "" {
			so.out = filepath.Join(o.out, slug(sub.Name))
		}
		if err := writeReport(ctx, so, report, sub, stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}

// writeReport plays each finding about subject sub o.repeat times with its
// reference, and writes what the runs showed as issues on its own page,
// docs/findings/SLUG.md beside o.doc.
func writeReport(ctx context.Context, o findingsOptions, report *findings.Report, sub findings.Subject, stdout, stderr io.Writer) error {
	page := filepath.Join(filepath.Dir(o.doc), "findings", slug(sub.Name)+".md")
	if err := outdir.CheckFile(page); err != nil {
		return asFlag("--report", err)
	}
	if o.out == "" {
		o.out = filepath.Join("runs", "report-"+slug(sub.Name)+"-"+time.Now().Format("20060102-150405"))
	}
	dir, err := claimOut(o.out, outdir.Runs, outID("sim findings --report"))
	if err != nil {
		return err
	}
	ctx, stop := untilStopped(ctx)
	defer stop()

	// An item is one finding: its story's name (or "hunt"), what sim run
	// is told to play (a catalogue name or a file), its YAML and title.
	type item struct{ name, target, file, yaml, title string }
	var items []item
	for _, c := range sub.Cells {
		if c.Kind != matrix.KindFinding {
			continue
		}
		sc, err := scenarios.Find(c.Story)
		if err != nil {
			return fmt.Errorf("--report %s: the page's story %s: %v", o.report, c.Story, err)
		}
		text, err := scenarios.Text(sc.File)
		if err != nil {
			return err
		}
		items = append(items, item{sc.Name, sc.Name, sc.File, string(text), sc.Title})
	}
	if h := sub.Hunt; h != nil && h.Found && h.Story != "" {
		// Beside the page, not in runs/ (which a clone has not): the
		// replay command the page gives must work from a clone.
		file := strings.TrimSuffix(page, ".md") + "-hunt.yaml"
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, []byte(h.Story), 0o644); err != nil {
			return err
		}
		title := "a schedule the hunt found: " + h.Summary
		items = append(items, item{"hunt", file, "found.yaml of `" + h.Command + "`", h.Story, title})
	}
	versions := reportVersions(report, sub)
	var issues []findings.Issue
	for n, it := range items {
		fmt.Fprintf(stderr, "sim findings --report: %s: %s (%d of %d), %d run(s)\n", sub.Name, it.name, n+1, len(items), o.repeat)
		is, err := playIssue(ctx, sub, it.target, filepath.Join(dir.Path(), fmt.Sprintf("%d-%s", n+1, it.name)), o.repeat)
		if ctx.Err() != nil {
			return interrupted("interrupted; nothing written to %s; the runs so far are in %s", page, dir.Path())
		}
		if err != nil {
			return err
		}
		is.Title = fmt.Sprintf("%s: %s", sub.Name, it.title)
		is.Versions = append(is.Versions, versions...)
		is.Story, is.StoryFile = it.yaml, it.file
		issues = append(issues, is)
	}
	made := "bin/sim findings --report " + o.report
	if strings.Contains(o.report, " ") {
		made = fmt.Sprintf("bin/sim findings --report %q", o.report)
	}
	if o.repeat != DefaultReportRepeat {
		made += fmt.Sprintf(" --repeat %d", o.repeat)
	}
	md := findings.IssuesMarkdown(sub, made, issues)
	if err := os.MkdirAll(filepath.Dir(page), 0o755); err != nil {
		return err
	}
	if err := writeOutFile("--report", page, []byte(md)); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	fmt.Fprintf(stderr, "written: %s; the runs are in %s\n", page, dir.Path())
	return nil
}

// reportSubjects finds the subjects name names on the page: by its name,
// its lock (for locksim's own) or its program's folder, which names one
// subject for each of the servers the program plays on
// ("node-redlock (redis)", "node-redlock (redlock)").
func reportSubjects(r *findings.Report, name string) ([]findings.Subject, error) {
	var names []string
	var subs []findings.Subject
	for _, s := range r.Subjects {
		if s.Named(name) {
			subs = append(subs, s)
		}
		names = append(names, s.Name)
	}
	if len(subs) > 0 {
		return subs, nil
	}
	return nil, fmt.Errorf("--report %s: the findings page has no lock of that name (%s); sim findings --only %s plays it first", name, strings.Join(names, ", "), name)
}

// playIssue plays story target (a catalogue name or a file) with sub's
// lock n times, each judged against its reference, then once with its
// counterfactual, into dir.
func playIssue(ctx context.Context, sub findings.Subject, target, dir string, n int) (findings.Issue, error) {
	ro := runOptions{targets: []string{target}, repeat: n, out: dir, quiet: true, clientCmd: strings.Join(sub.Program, " ")}
	sc, err := scenarios.Find(target)
	if err != nil {
		return findings.Issue{}, err
	}
	if sub.Lock != sc.Lock {
		ro.lock = sub.Lock
	}
	is := findings.Issue{N: n, Command: reportCommand(target, ro)}
	if len(sub.Program) > 0 {
		is.Program = sub.Program[len(sub.Program)-1]
	}
	// A run whose lock does worse exits 1: the runs are read back below.
	// Any other failure (a story that did not happen as told, a server
	// that would not start) is said beside the runs it left undecided.
	if err := cmdRun(ctx, ro, strings.NewReader(""), io.Discard, io.Discard); err != nil && !errors.Is(err, errMismatch) && ctx.Err() == nil {
		is.Undecided = append(is.Undecided, "sim run: "+err.Error())
	}
	var first *struct{ happened, expected, parted string }
	for i := 1; i <= n; i++ {
		run, _, err := reports.LoadRun(repeatDir(dir, i, n))
		if err != nil {
			is.Undecided = append(is.Undecided, fmt.Sprintf("run %d did not finish (%v)", i, err))
			continue
		}
		ref := run.Reference
		switch {
		case ref == nil:
			is.Undecided = append(is.Undecided, fmt.Sprintf("run %d played no reference", i))
			continue
		case run.Check.Verdict == checker.Unknown || ref.Verdict == checker.Unknown || ref.Verdict == "":
			why := ref.Sentence(run)
			if run.Check.Verdict == checker.Unknown {
				why += " (" + run.Check.Summary + ")"
			}
			if ref.Verdict == checker.Unknown {
				why += " (the reference: " + ref.Summary + ")"
			}
			is.Undecided = append(is.Undecided, fmt.Sprintf("run %d %s", i, why))
			continue
		}
		is.RefLock = ref.Lock
		if checker.Worse(ref.Verdict, checker.Safe) {
			is.RefK++
		}
		if !ref.Worse {
			continue
		}
		is.K++
		if first == nil {
			first = &struct{ happened, expected, parted string }{
				happened: fmt.Sprintf("`%s`: %s", run.Check.Verdict, checker.Why(run.Check.Verdict, run.Check.Summary)),
				expected: fmt.Sprintf("the reference %s ends `%s`: %s", ref.Lock, ref.Verdict, checker.Why(ref.Verdict, ref.Summary)),
				parted:   ref.Parted(run),
			}
			if run.Environment != "" {
				is.Versions = append(is.Versions, "servers: "+run.Environment)
			}
		}
	}
	if first != nil {
		is.Happened, is.Expected, is.Parted = first.happened, first.expected, first.parted
	} else {
		is.Happened, is.Expected = "no run ended worse than the reference", "as the lock did, in every run decided"
	}
	if sc.Counterfactual == nil {
		return is, nil
	}
	cro := ro
	cro.repeat, cro.counterfactual, cro.out = 1, true, filepath.Join(dir, "with-counterfactual")
	if change, err := changes([]*scenarios.Scenario{sc}, cro); err == nil {
		if v, err := scenarios.Resolve(sc, change); err == nil && v.SkipCF != "" {
			// The lock played replaces the one the counterfactual changes.
			is.Counterfactual = fmt.Sprintf("%s: not played (%s)", sc.Counterfactual.Change, v.SkipCF)
			return is, nil
		}
	}
	runErr := cmdRun(ctx, cro, strings.NewReader(""), io.Discard, io.Discard)
	run, _, err := reports.LoadRun(cro.out)
	switch {
	case err != nil && runErr != nil:
		// Refused before it ran: a counterfactual that changes the lock to
		// one the client program does not play, say.
		is.Counterfactual = fmt.Sprintf("%s: not played (%v)", sc.Counterfactual.Change, runErr)
	case err != nil:
		is.Counterfactual = fmt.Sprintf("%s: not played to its end (%v)", sc.Counterfactual.Change, err)
	case run.Counterfactual == nil || run.Counterfactual.Verdict == "":
		is.Counterfactual = sc.Counterfactual.Change + ": not played to its end"
	default:
		cf := run.Counterfactual
		flips := "the verdict flips"
		if !cf.Flipped {
			flips = "the verdict does not flip"
		}
		is.Counterfactual = fmt.Sprintf("%s: `%s` where the story ended `%s` (%s; one run, `%s --counterfactual`)",
			cf.Change, cf.Verdict, run.Check.Verdict, flips, is.Command)
	}
	return is, nil
}

// reportCommand is the one sim run command that plays a finding again.
func reportCommand(target string, o runOptions) string {
	cmd := "bin/sim run " + target
	if o.lock != "" {
		cmd += " --lock " + o.lock
	}
	if o.clientCmd != "" {
		cmd += fmt.Sprintf(" --client-cmd %q", o.clientCmd)
	}
	return cmd + fmt.Sprintf(" --repeat %d", o.repeat)
}

// reportVersions names what the runs played beside the servers: the
// library (the subject's own words, with its version), locksim's Go
// modules, the program's runtime and the OS.
func reportVersions(r *findings.Report, s findings.Subject) []string {
	out := []string{"library: " + s.About}
	if len(s.Program) > 0 {
		if v := runtimeVersion(s.Program); v != "" {
			out = append(out, "runtime: "+v)
		}
	} else if len(r.Modules) > 0 {
		out = append(out, "Go modules: "+strings.Join(r.Modules, ", "))
	}
	out = append(out, fmt.Sprintf("harness: locksim built with %s, %d cores", runtime.Version(), runtime.NumCPU()))
	if osName := osRelease(); osName != "" {
		out = append(out, "OS: "+osName)
	}
	return out
}

// runtimeVersion is the version line of the program's interpreter, the
// one that runs it: argv's first word, or the script's #! line (node for
// client.js, python3 for client.py when neither says), java for a program
// that runs it.
func runtimeVersion(argv []string) string {
	var cmd []string
	last := argv[len(argv)-1]
	interp := argv[0]
	if len(argv) == 1 {
		interp = shebang(last)
	}
	switch {
	case strings.HasSuffix(last, ".js"):
		cmd = []string{cmp.Or(interp, "node"), "--version"}
	case strings.HasSuffix(last, ".py"):
		cmd = []string{cmp.Or(interp, "python3"), "--version"}
	default:
		b, err := os.ReadFile(last)
		if err != nil || !strings.Contains(string(b), "java") {
			return ""
		}
		cmd = []string{"java", "-version"}
	}
	b, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if filepath.Base(cmd[0]) == "node" {
		return "Node.js " + first
	}
	return first
}

// shebang is the interpreter a script's #! line names ("/usr/bin/python3";
// "node" for "#!/usr/bin/env node"), or "".
func shebang(script string) string {
	f, err := os.Open(script)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	words := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(words) == 0 {
		return ""
	}
	if filepath.Base(words[0]) == "env" && len(words) > 1 {
		return words[1]
	}
	return words[0]
}

// osRelease is the OS's PRETTY_NAME and the kernel's release.
func osRelease() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return ""
	}
	name := ""
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
			name = strings.Trim(v, `"`)
		}
	}
	if k, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		name += ", Linux " + strings.TrimSpace(string(k))
	}
	return name
}
