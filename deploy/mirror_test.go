package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildImagesMirror: docker/build-images takes the debootstrap mirror
// from the machine's apt sources (the first archive that serves bookworm
// itself, one-line or deb822, in a file apt reads), DEBIAN_MIRROR
// overrides it, and with no such source none is named: debootstrap
// picks its own (no archive host is written in the project).
func TestBuildImagesMirror(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		env   string
		want  string
	}{
		{"deb822", map[string]string{
			"sources.list.d/cloud.list":     "deb https://packages.example.com/apt cloud-sdk-bookworm main\n",
			"sources.list.d/debian.sources": "Types: deb\nURIs: http://mirror.example.org/debian-security\nSuites: bookworm-security\n\nTypes: deb deb-src\n# a comment\nURIs: http://mirror.example.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n",
		}, "", "http://mirror.example.org/debian"},
		{"one line with options", map[string]string{
			"sources.list": "# deb http://commented.example.org/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://ftp.example.de/debian bookworm main\n",
		}, "", "http://ftp.example.de/debian"},
		{"disabled stanza and unread file", map[string]string{
			"sources.list.d/a.sources":                "Types: deb\nURIs: http://off.example.org/debian\nSuites: bookworm\nEnabled: no\n",
			"sources.list.d/b.sources.disabled-by-me": "Types: deb\nURIs: http://unread.example.org/debian\nSuites: bookworm\n",
		}, "", "debootstrap's default"},
		{"an Ubuntu machine", map[string]string{
			"sources.list": "deb http://archive.ubuntu.com/ubuntu noble main\n",
		}, "", "debootstrap's default"},
		{"DEBIAN_MIRROR overrides", map[string]string{
			"sources.list": "deb http://ftp.example.de/debian bookworm main\n",
		}, "http://override.example.net/debian", "http://override.example.net/debian"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			etc := t.TempDir()
			os.MkdirAll(filepath.Join(etc, "sources.list.d"), 0o755)
			for f, body := range tc.files {
				if err := os.WriteFile(filepath.Join(etc, f), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(filepath.Join("..", "docker", "build-images"), "--print-mirror")
			cmd.Env = append(os.Environ(), "APT_ETC="+etc, "DEBIAN_MIRROR="+tc.env)
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != tc.want {
				t.Errorf("build-images --print-mirror: %q, %v; want %s", out, err, tc.want)
			}
		})
	}
}
