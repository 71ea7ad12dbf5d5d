package env

import (
	"archive/zip"
	"io/fs"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Versions of this machine's server binaries, each read once: what a
// run on the local backend starts (the docker backend's images are built
// from the same Debian packages). "" when the binary is not installed.
var (
	RedisVersion     = versionOnce(func() string { return match(`v=(\S+)`, "redis-server", "--version") })
	PostgresVersion  = versionOnce(postgresVersion)
	PgbouncerVersion = versionOnce(pgbouncerVersion)
	ZooKeeperVersion = versionOnce(zookeeperVersion)
)

func versionOnce(f func() string) func() string { return sync.OnceValue(f) }

// match runs argv and returns the first group of pattern in its output.
func match(pattern string, argv ...string) string {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return ""
	}
	m := regexp.MustCompile(pattern).FindStringSubmatch(string(out))
	if m == nil {
		return ""
	}
	return m[1]
}

func postgresVersion() string {
	dir, err := postgresBinDir()
	if err != nil {
		return ""
	}
	return match(`\(PostgreSQL\) (\S+)`, filepath.Join(dir, "postgres"), "--version")
}

func pgbouncerVersion() string {
	bin, err := pgbouncerBin()
	if err != nil {
		return ""
	}
	return match(`PgBouncer (\S+)`, bin, "--version")
}

// zookeeperVersion reads the version Maven recorded in zookeeper.jar
// (META-INF/maven/.../pom.properties: version=3.8.0).
func zookeeperVersion() string {
	z, err := zip.OpenReader(zkJar)
	if err != nil {
		return ""
	}
	defer z.Close()
	b, err := fs.ReadFile(z, "META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "version="); ok {
			return v
		}
	}
	return ""
}
