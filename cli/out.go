package cli

// out.go: where the commands write. Every --out directory is checked
// before any server starts and claimed through package outdir; a
// directory, or a --junit/--markdown/--html file, holding anything
// locksim did not write is refused in one line (exit 2).

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/locksim/locksim/outdir"
)

// checkOutDir says whether dir may become kind's --out, writing nothing.
func checkOutDir(dir string, kind outdir.Kind) error {
	return asFlag("--out", outdir.Check(dir, kind))
}

// claimOut claims dir as kind's --out.
func claimOut(dir string, kind outdir.Kind, what string) (*outdir.Dir, error) {
	d, err := outdir.Claim(dir, kind, outID(what))
	return d, asFlag("--out", err)
}

// checkOutFile says whether a single-file output (--junit FILE) may be
// written ("": none asked for).
func checkOutFile(flag, path string) error {
	if path == "" {
		return nil
	}
	return asFlag(flag, outdir.CheckFile(path))
}

// writeOutFile writes a single-file output, marked as locksim's.
func writeOutFile(flag, path string, data []byte) error {
	if err := outdir.WriteMarkedFile(path, data); err != nil {
		var r *outdir.RefusedError
		if errors.As(err, &r) {
			return asFlag(flag, err)
		}
		return fmt.Errorf("%s: %v", flag, err)
	}
	return nil
}

// asFlag names the flag in a refusal: "--out runs/x: holds notes.txt, ...".
func asFlag(flag string, err error) error {
	var r *outdir.RefusedError
	if errors.As(err, &r) {
		return fmt.Errorf("%s %w", flag, err)
	}
	return err
}

// outID names what a command writes into a directory it claims: the
// command, when and which process.
func outID(what string) string {
	return fmt.Sprintf("%s %s pid %d", what, time.Now().Format(time.RFC3339), os.Getpid())
}
