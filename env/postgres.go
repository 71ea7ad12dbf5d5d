package env

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locksim/locksim/storage"
)

// ErrPostgresNotFound says the PostgreSQL server binaries are not installed.
var ErrPostgresNotFound = errors.New("PostgreSQL not found: apt-get install postgresql")

// DefaultPostgresImage is the docker backend's default PostgreSQL image
// (built by `make docker`, as DefaultRedisImage is).
const DefaultPostgresImage = "locksim/postgres:bookworm"

// PostgresOptions tunes a throwaway cluster.
type PostgresOptions struct {
	// IdleSessionTimeout makes the server end any session idle for longer
	// (idle_session_timeout, PostgreSQL 14+), as poolers and managed
	// services often do; with it a session's advisory locks go too.
	// Zero leaves it off.
	IdleSessionTimeout time.Duration
	// IdleInTransactionSessionTimeout makes the server end any session
	// idle inside an open transaction for longer
	// (idle_in_transaction_session_timeout): the transaction rolls back and
	// its transaction-level advisory locks go with it. Zero leaves it off.
	IdleInTransactionSessionTimeout time.Duration
	// StartTimeout bounds initdb plus start-up. Zero means 30s.
	StartTimeout time.Duration
	// Image, if set, runs the server in a container of this image (the
	// docker backend: host network, as the image's postgres user, the
	// cluster inside the container) instead of as a local process. The
	// image needs initdb and postgres on its PATH and a postgres user.
	Image string
}

// Postgres is one throwaway PostgreSQL cluster listening on 127.0.0.1,
// run by the harness and killed with it.
type Postgres struct {
	dir  string // the cluster's dir (data/ and the unix socket); removed by Stop
	port int
	bin  string
	opts PostgresOptions
	log  string
	// serverProc is the postmaster: a fault kills (Crash) and restarts
	// it (Restart); its backends, each leading a session of its own, exit
	// when they notice it died.
	serverProc
}

// postgresBinDir finds initdb and postgres: `pg_config --bindir` first,
// then the newest /usr/lib/postgresql/*/bin.
func postgresBinDir() (string, error) {
	ok := func(d string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if st, err := os.Stat(filepath.Join(d, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" && ok(d) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { // newest major version first
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	return "", ErrPostgresNotFound
}

// postgresCredential is nil unless the harness runs as root, in which case
// initdb and postgres (which refuse to run as root) run as the `postgres`
// system user.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL will not: need the postgres system user: %v", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("postgres user has uid %q gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// makeReachable gives "others" search (x) permission on every ancestor of
// dir that lacks it, so that the unprivileged postgres user can reach a
// dir inside, say, a 0700 run dir made by root. Search only: nobody gains
// the right to list those dirs.
func makeReachable(dir string) error {
	for d := filepath.Dir(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("make %s reachable for the postgres user: %v", d, err)
			}
		}
	}
	return nil
}

// StartPostgres makes a throwaway cluster in dir (created if missing, and
// removed by Stop, contents and all; "" means a new temp dir, on /dev/shm
// when there is one, that Cleanup also removes) and starts it on a free
// port of 127.0.0.1, with the unix socket in dir too. The data dir is a
// copy of a per-process initdb template. Durability is off (fsync,
// synchronous_commit, full_page_writes): the cluster lives for one run.
// It returns once the server answers a query.
func StartPostgres(ctx context.Context, dir string, o PostgresOptions) (pg *Postgres, err error) {
	var bin string
	if o.Image == "" {
		if bin, err = postgresBinDir(); err != nil {
			return nil, err
		}
	}
	if o.IdleInTransactionSessionTimeout < 0 {
		return nil, fmt.Errorf("postgres: negative idle_in_transaction_session_timeout %v", o.IdleInTransactionSessionTimeout)
	}
	if o.IdleSessionTimeout < 0 {
		return nil, fmt.Errorf("postgres: negative idle_session_timeout %v", o.IdleSessionTimeout)
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	if o.Image != "" {
		return startPostgresContainer(ctx, o)
	}

	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	if dir, err = dirOrTemp(dir, fastTempDir, "locksim-pg-"); err != nil {
		return nil, err
	}
	pg = &Postgres{dir: dir, bin: bin, opts: o, log: filepath.Join(dir, "postgres.log"), serverProc: serverProc{what: "postgres"}}
	defer func() {
		if err != nil {
			pg.Stop() // also removes dir
			pg = nil
		}
	}()
	if cred != nil {
		if err := makeReachable(dir); err != nil {
			return pg, err
		}
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return pg, fmt.Errorf("chown %s to postgres: %v", dir, err)
		}
	}

	tmpl, err := postgresTemplate(ctx, bin, cred)
	if err != nil {
		return pg, err
	}
	// cp -a keeps the postgres user's ownership and the 0700 mode.
	if out, err := exec.CommandContext(ctx, "cp", "-a", tmpl, filepath.Join(dir, "data")).CombinedOutput(); err != nil {
		return pg, fmt.Errorf("copy the initdb template: %v\n%s", err, lastLines(out, 5))
	}

	err = onFreePort(ctx, func(port int) error {
		pg.port = port
		return clash(pg.start(ctx, cred), "could not bind")
	})
	return pg, err
}

// fastTempDir is TempDir on /dev/shm (tmpfs) when there is one with
// shmRoom free: initdb and the copy of its template take about half as
// long there as on the disk here. Like TempDir, Cleanup removes it.
func fastTempDir(pattern string) (string, error) {
	parent := ""
	var fs syscall.Statfs_t
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && syscall.Access("/dev/shm", 0o2|0o1) == nil &&
		syscall.Statfs("/dev/shm", &fs) == nil && fs.Bavail*uint64(fs.Bsize) >= shmRoom {
		parent = "/dev/shm"
	}
	d, err := tempDirIn(parent, pattern)
	if err != nil && parent != "" {
		d, err = tempDirIn("", pattern)
	}
	return d, err
}

// shmRoom is the space /dev/shm must have free to hold PostgreSQL's
// clusters: the template and a cluster take about 40 MB each, and a
// container's /dev/shm (docker's and Kubernetes' default: 64 MB) filled
// the copy of a second cluster half-way (No space left on device).
const shmRoom = 256 << 20

// The initdb template: initdb (about a second even with --no-sync) runs
// once per process, and each cluster starts from a copy of its result.
// It lives in a temp dir that Cleanup removes.
var pgTmpl struct {
	sync.Mutex
	data string
}

func postgresTemplate(ctx context.Context, bin string, cred *syscall.Credential) (string, error) {
	pgTmpl.Lock()
	defer pgTmpl.Unlock()
	if pgTmpl.data != "" {
		if _, err := os.Stat(filepath.Join(pgTmpl.data, "PG_VERSION")); err == nil {
			return pgTmpl.data, nil
		}
		pgTmpl.data = ""
	}
	dir, err := fastTempDir("locksim-pg-template-")
	if err != nil {
		return "", err
	}
	if cred != nil {
		if err := makeReachable(dir); err != nil {
			RemoveTempDir(dir)
			return "", err
		}
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			RemoveTempDir(dir)
			return "", fmt.Errorf("chown %s to postgres: %v", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
		"--locale=C", "--no-sync", "--no-instructions")
	initdb.Dir = dir
	initdb.Env = pgEnv()
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		RemoveTempDir(dir)
		return "", fmt.Errorf("initdb: %v\n%s", err, lastLines(out, 15))
	}
	pgTmpl.data = data
	return data, nil
}

func pgEnv() []string {
	return []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "LANG=C", "TZ=UTC"}
}

// settings are the server's -c settings and port for a throwaway cluster.
func (pg *Postgres) settings() []string {
	args := []string{
		"-p", strconv.Itoa(pg.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "shared_buffers=32MB",
		"-c", "logging_collector=off",
		// Dynamic shared memory as files in the data dir, so that it goes
		// with the dir even when the server is killed with SIGKILL.
		"-c", "dynamic_shared_memory_type=mmap",
		"-c", "log_min_messages=warning",
	}
	for name, d := range map[string]time.Duration{
		"idle_session_timeout":                pg.opts.IdleSessionTimeout,
		"idle_in_transaction_session_timeout": pg.opts.IdleInTransactionSessionTimeout,
	} {
		if d > 0 {
			args = append(args, "-c", fmt.Sprintf("%s=%d", name, max(d.Milliseconds(), 1)))
		}
	}
	return args
}

func (pg *Postgres) start(ctx context.Context, cred *syscall.Credential) error {
	args := append([]string{"-D", filepath.Join(pg.dir, "data"), "-k", pg.dir}, pg.settings()...)
	logf, err := os.OpenFile(pg.log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	if cred != nil {
		_ = logf.Chown(int(cred.Uid), int(cred.Gid))
	}
	cmd := exec.Command(filepath.Join(pg.bin, "postgres"), args...)
	cmd.Dir = pg.dir
	cmd.Env = pgEnv()
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	proc, err := StartProc("postgres", cmd)
	if err != nil {
		return err
	}
	pg.set(proc)
	return pg.waitReady(ctx, logTail(pg.log))
}

// startPostgresContainer runs the cluster in a container of o.Image: initdb
// into a dir inside the container, then postgres, as the image's postgres
// user (PostgreSQL refuses root).
func startPostgresContainer(ctx context.Context, o PostgresOptions) (pg *Postgres, err error) {
	pg = &Postgres{opts: o, serverProc: serverProc{what: "postgres"}}
	const data = "/tmp/locksim-pgdata"
	err = onFreePort(ctx, func(port int) error {
		pg.port = port
		script := "set -e; [ -f " + data + "/PG_VERSION ] || initdb -D " + data +
			" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null; exec postgres -D " + data + " -k /tmp " +
			strings.Join(pg.settings(), " ")
		c, err := startContainer(ctx, containerSpec{What: "postgres", Image: o.Image, User: "postgres",
			Argv: []string{"sh", "-c", script}, Env: pgEnv()[1:]}) // the image's own PATH
		if err != nil {
			return err
		}
		pg.set(c)
		if err := pg.waitReady(ctx, func() string { return c.Logs(15) }); err != nil {
			c.Kill()
			return clash(fmt.Errorf("%w (image %s)", err, o.Image), "could not bind")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pg, nil
}

// Image is the container image the server runs in ("" for a local process).
func (pg *Postgres) Image() string { return pg.opts.Image }

// waitReady waits until the server answers a query (it accepts TCP
// connections, then says "starting up", before it is ready); tail is the
// end of its log, for errors.
func (pg *Postgres) waitReady(ctx context.Context, tail func() string) error {
	return waitQuery(ctx, pg.DSN(pg.Addr()), pg.Proc(), tail,
		"postgres exited at start-up", fmt.Sprintf("postgres did not accept connections within %v", pg.opts.StartTimeout))
}

// waitQuery waits until dsn answers SELECT 1, the server's process p
// exits (exited, and why) or ctx ends (p killed; late, and the last
// error); tail is the end of the server's log, for errors.
func waitQuery(ctx context.Context, dsn string, p process, tail func() string, exited, late string) error {
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(cctx, dsn)
		if err == nil {
			var one int
			err = conn.QueryRow(cctx, "SELECT 1").Scan(&one)
			conn.Close(cctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-p.Done():
			return fmt.Errorf("%s: %v\n%s", exited, p.Err(), tail())
		case <-ctx.Done():
			p.Kill()
			return fmt.Errorf("%s: %v\n%s", late, last, tail())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// logTail reads the last 15 lines of the log at path, for errors.
func logTail(path string) func() string {
	return func() string {
		b, _ := os.ReadFile(path)
		return lastLines(b, 15)
	}
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Addr is host:port of the server on 127.0.0.1.
func (pg *Postgres) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(pg.port))
}

// Dir is the cluster's dir (data/, the unix socket and postgres.log).
func (pg *Postgres) Dir() string { return pg.dir }

// Pid is the postmaster's pid (also its process group; each backend
// leads a session of its own).
func (pg *Postgres) Pid() int {
	p := pg.Proc()
	if p == nil {
		return 0
	}
	return p.Pid()
}

// DSN is a connection string to database postgres as user postgres at
// addr (host:port), so that a caller can aim it at a toxiproxy proxy in
// front of the server instead of Addr itself.
func (pg *Postgres) DSN(addr string) string { return postgresDSN(addr, "") }

// postgresDSN is a connection string to database postgres as user
// postgres at addr, with the query parameters extra ("a=b&c=d") added.
func postgresDSN(addr, extra string) string {
	q := "sslmode=disable&connect_timeout=5"
	if extra != "" {
		q += "&" + extra
	}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: addr, Path: "/postgres", RawQuery: q}
	return u.String()
}

// stopGently sends sig to p's main process, waits up to d for it to
// exit, then kills its whole group (SIGKILL and SIGCONT, so that a
// member stopped by a fault goes too).
func stopGently(p process, sig syscall.Signal, d time.Duration) {
	if p == nil || p.Exited() {
		return
	}
	_ = syscall.Kill(p.Pid(), sig)
	select {
	case <-p.Done():
	case <-time.After(d):
	}
	p.Kill()
}

// Stop shuts the server down (fast shutdown: SIGINT to the postmaster,
// then SIGKILL to its whole group after 5s) and removes its dir.
func (pg *Postgres) Stop() {
	if pg == nil {
		return
	}
	if c, ok := pg.Proc().(*Container); ok {
		c.Kill() // the cluster lives in the container: it goes with it
		return
	}
	stopGently(pg.Proc(), syscall.SIGINT, 5*time.Second) // fast shutdown
	if pg.dir != "" {
		RemoveTempDir(pg.dir)
	}
}

// Restart kills the server as Crash does (kill -9 to the postmaster's
// whole group) and starts it again on the same port and data dir, as a
// service manager restarts a crashed server: PostgreSQL replays its WAL,
// and every session is gone, with the advisory locks it held. Local
// processes only: a container's cluster lives in the container.
func (pg *Postgres) Restart(ctx context.Context) error {
	if pg.opts.Image != "" {
		return fmt.Errorf("restart postgres: not on the docker backend (the cluster lives in its container)")
	}
	pg.Crash()
	cred, err := postgresCredential()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, pg.opts.StartTimeout)
	defer cancel()
	// A backend is a session leader of its own (PostgreSQL's children
	// call setsid), out of the group the kill reached: each exits when it
	// notices that the postmaster died, and until the last has, the new
	// postmaster refuses to start on the shared memory they still hold.
	for {
		err = pg.start(ctx, cred)
		if err == nil || !(strings.Contains(err.Error(), "could not bind") || strings.Contains(err.Error(), "pre-existing shared memory block")) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Reset brings the cluster back to a clean start for the next run: it
// terminates every other client session (which frees their advisory
// locks), then drops and recreates the protected-resource tables
// (storage.Setup).
func (pg *Postgres) Reset(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, pg.DSN(pg.Addr()))
	if err != nil {
		return fmt.Errorf("postgres reset: %v", err)
	}
	defer conn.Close(context.Background())
	// pg_terminate_backend(pid, timeout) waits (up to 5s) for the backend
	// to be gone, so its locks are released when this returns.
	rows, err := conn.Query(ctx, `SELECT pid, pg_terminate_backend(pid, 5000) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`)
	if err != nil {
		return fmt.Errorf("postgres reset: terminate sessions: %v", err)
	}
	for rows.Next() {
		var pid int32
		var ok bool
		if err := rows.Scan(&pid, &ok); err != nil {
			rows.Close()
			return fmt.Errorf("postgres reset: %v", err)
		}
		if !ok {
			rows.Close()
			return fmt.Errorf("postgres reset: backend %d did not terminate", pid)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres reset: terminate sessions: %v", err)
	}
	if err := storage.Setup(ctx, pg.DSN(pg.Addr())); err != nil {
		return fmt.Errorf("postgres reset: %v", err)
	}
	return nil
}
