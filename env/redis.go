package env

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/locksim/locksim/clockshim"
)

// Persistence is how a Redis server keeps its data across a crash.
type Persistence string

const (
	// PersistNone keeps nothing: no RDB snapshots, no AOF (the default).
	PersistNone Persistence = "none"
	// PersistEverysec is AOF with appendfsync everysec: an OS crash or a
	// power loss can lose the last second of writes; a kill -9 of the
	// server loses none (they are in the OS page cache).
	PersistEverysec Persistence = "everysec"
	// PersistAlways is AOF with appendfsync always: a write is on disk
	// before its reply is sent.
	PersistAlways Persistence = "always"
)

// DefaultRedisImage is the docker backend's default Redis image, built
// locally by `make docker` (docker/build-images) from Debian's packages:
// the same server version as the local backend on this Debian (so are
// DefaultPostgresImage and DefaultEtcdImage).
const DefaultRedisImage = "locksim/redis:bookworm"

// RedisOptions says how to start one redis-server.
type RedisOptions struct {
	// Name names the server ("A".."E"); it must be set.
	Name string
	// Dir is the parent dir; the server works in Dir/redis-<Name>. Empty:
	// a new temp dir that Cleanup removes.
	Dir string
	// Persistence defaults to PersistNone.
	Persistence Persistence
	// ReplicaOf ("host:port"), if set, starts the server as an
	// asynchronous replica of that primary.
	ReplicaOf string
	// Image, if set, runs the server in a container of this image (the
	// docker backend: host network, its dir and the clock shim mounted at
	// their host paths) instead of as a local process. The image needs sh,
	// redis-server or valkey-server on its PATH, and glibc (the shim is a
	// glibc library).
	Image string
}

// Redis is a real redis-server child process on 127.0.0.1, running under
// the clock shim so that its wall clock can be shifted while it runs.
type Redis struct {
	Name string
	Addr string // 127.0.0.1:Port
	Port int
	// Dir is the server's own dir (config, log, AOF, clock file).
	Dir string
	// Clock shifts the wall clock this server sees.
	Clock *clockshim.Control

	disk    *clockshim.Disk // what its syncs put on the disk (PowerLoss)
	opts    RedisOptions
	shimEnv []string // LD_PRELOAD and the control file
	shimLib string

	serverProc
	mu     sync.Mutex // guards client
	client *redis.Client
}

// RedisStartTimeout bounds how long StartRedis and Restart wait for PING.
const RedisStartTimeout = 3 * time.Second

// redisServerPath finds the redis-server binary.
func redisServerPath() string {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	return "/usr/bin/redis-server"
}

// StartRedis starts a redis-server on a free port of 127.0.0.1, under the
// clock shim (control file Dir/redis-<Name>/clock), and waits until it
// answers PING. The process dies with the harness (see StartProc).
func StartRedis(ctx context.Context, o RedisOptions) (*Redis, error) {
	if o.Name == "" {
		return nil, errors.New("start redis: RedisOptions.Name is empty")
	}
	switch o.Persistence {
	case "":
		o.Persistence = PersistNone
	case PersistNone, PersistEverysec, PersistAlways:
	default:
		return nil, fmt.Errorf("start redis %s: unknown persistence %q (want none, everysec or always)", o.Name, o.Persistence)
	}
	if o.ReplicaOf != "" {
		if _, _, err := net.SplitHostPort(o.ReplicaOf); err != nil {
			return nil, fmt.Errorf("start redis %s: ReplicaOf %q: %w", o.Name, o.ReplicaOf, err)
		}
	}
	if o.Dir == "" {
		d, err := TempDir("locksim-redis-")
		if err != nil {
			return nil, fmt.Errorf("start redis %s: %w", o.Name, err)
		}
		o.Dir = d
	}
	dir, err := filepath.Abs(filepath.Join(o.Dir, "redis-"+o.Name))
	if err != nil {
		return nil, fmt.Errorf("start redis %s: %w", o.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start redis %s: %w", o.Name, err)
	}
	clock, err := clockshim.NewControl(filepath.Join(dir, "clock"))
	if err != nil {
		return nil, fmt.Errorf("start redis %s: %w", o.Name, err)
	}
	shimEnv, err := clockshim.Env(clock.Path())
	if err != nil {
		clock.Close()
		return nil, fmt.Errorf("start redis %s: %w", o.Name, err)
	}
	disk, err := clockshim.NewDisk(filepath.Join(dir, "disk"))
	if err != nil {
		clock.Close()
		return nil, fmt.Errorf("start redis %s: %w", o.Name, err)
	}
	shimEnv = append(shimEnv, clockshim.DiskEnv(disk.Path()))
	shimLib, _ := clockshim.Library() // Env found it
	r := &Redis{Name: o.Name, Dir: dir, Clock: clock, disk: disk, opts: o, shimEnv: shimEnv, shimLib: shimLib,
		serverProc: serverProc{what: "redis " + o.Name}}
	err = onFreePort(ctx, func(port int) error {
		r.Port, r.Addr = port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		return r.start(ctx)
	})
	if err != nil {
		clock.Close()
		disk.Close()
		return nil, fmt.Errorf("start redis %s: %w", o.Name, err)
	}
	return r, nil
}

// LogPath is the server's log file.
func (r *Redis) LogPath() string { return filepath.Join(r.Dir, "redis.log") }

func (r *Redis) config() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# written by locksim for redis %s", r.Name)
	p("bind 127.0.0.1")
	p("protected-mode yes")
	p("port %d", r.Port)
	p("dir %q", r.Dir)
	p("daemonize no")
	p("supervised no")
	p("logfile %q", r.LogPath())
	p("dbfilename %s", redisRDB)
	p(`save ""`)
	switch r.opts.Persistence {
	case PersistEverysec, PersistAlways:
		p("appendonly yes")
		p("appendfsync %s", r.opts.Persistence)
	default:
		p("appendonly no")
	}
	// Replicas sync at once rather than after the default 5 s delay.
	p("repl-diskless-sync-delay 0")
	// DEBUG (SLEEP, SET-ACTIVE-EXPIRE...) from loopback only.
	p("enable-debug-command local")
	if r.opts.ReplicaOf != "" {
		host, port, _ := net.SplitHostPort(r.opts.ReplicaOf)
		p("replicaof %s %s", host, port)
	}
	return b.String()
}

// start writes the config and starts the server on r.Port; the caller
// must not hold r.mu concurrently with another start.
func (r *Redis) start(ctx context.Context) error {
	conf := filepath.Join(r.Dir, "redis.conf")
	if err := os.WriteFile(conf, []byte(r.config()), 0o644); err != nil {
		return fmt.Errorf("start redis %s: %w", r.Name, err)
	}
	stderr, err := os.OpenFile(filepath.Join(r.Dir, "redis.stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start redis %s: %w", r.Name, err)
	}
	defer stderr.Close() // the child has its own copy
	logStart := redisFileSize(r.LogPath())
	var p process
	if r.opts.Image != "" {
		p, err = startContainer(ctx, containerSpec{What: "redis " + r.Name, Image: r.opts.Image,
			Argv: []string{"sh", "-c", redisInImage, conf}, Env: r.shimEnv, WorkDir: r.Dir,
			Binds: []string{r.Dir + ":" + r.Dir, r.shimLib + ":" + r.shimLib + ":ro"}})
	} else {
		cmd := exec.Command(redisServerPath(), conf)
		cmd.Dir = r.Dir
		cmd.Env = append(os.Environ(), r.shimEnv...)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		p, err = StartProc("redis "+r.Name, cmd)
	}
	if err != nil {
		return err
	}
	r.set(p)
	err = redisWaitPing(ctx, r.Addr, p, RedisStartTimeout)
	if err == nil {
		// A PONG may come from another server that holds the port (one
		// that took it between freePort and this server's bind, such as
		// a proxy to another node): this one then failed to bind, and
		// its container may not have said so yet.
		err = redisDirIs(r.Addr, r.Dir, time.Second)
	}
	if err == nil && r.opts.Image != "" {
		err = r.checkShim(p)
	}
	if err != nil {
		p.Kill()
		newLog := redisTailFrom(r.LogPath(), logStart)
		e := fmt.Errorf("start redis %s on %s: %w\n%s", r.Name, r.Addr, err, r.tails())
		if strings.Contains(newLog, "Address already in use") {
			return errors.Join(errPortInUse, e)
		}
		return e
	}
	return nil
}

// redisWaitPing waits until addr answers PING with PONG (not LOADING), the
// process exits, ctx ends or d passes.
func redisWaitPing(ctx context.Context, addr string, p process, d time.Duration) error {
	return waitAnswers(ctx, p, d, "redis-server", "PONG", func() error { return redisPing(addr, 200*time.Millisecond) })
}

func redisPing(addr string, timeout time.Duration) error {
	return redisAsk(addr, "PING", timeout, func(rd *bufio.Reader) error {
		line, err := rd.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) != "+PONG" {
			return fmt.Errorf("PING: %s", strings.TrimSpace(line))
		}
		return nil
	})
}

// redisAsk sends command to the Redis server on addr, on a connection of
// its own that lives at most timeout, and hands its reply to read.
func redisAsk(addr, command string, timeout time.Duration, read func(*bufio.Reader) error) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(command + "\r\n")); err != nil {
		return err
	}
	return read(bufio.NewReader(c))
}

// redisDirIs checks that the Redis server on addr is the one whose data
// dir is dir (CONFIG GET dir): another server's answer is a clash
// (errPortInUse).
func redisDirIs(addr, dir string, timeout time.Duration) error {
	var lines []string
	err := redisAsk(addr, "CONFIG GET dir", timeout, func(rd *bufio.Reader) error {
		for len(lines) < 5 {
			line, err := rd.ReadString('\n')
			if err != nil {
				return fmt.Errorf("CONFIG GET dir: %v", err)
			}
			lines = append(lines, strings.TrimRight(line, "\r\n"))
			if len(lines) == 1 && lines[0] != "*2" {
				break
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// *2, $3, dir, $N, the dir.
	if len(lines) != 5 || lines[2] != "dir" {
		return errors.Join(errPortInUse, fmt.Errorf("%s answers CONFIG GET dir with %q: not the Redis server started there", addr, strings.Join(lines, " ")))
	}
	if got := lines[4]; filepath.Clean(got) != filepath.Clean(dir) {
		return errors.Join(errPortInUse, fmt.Errorf("%s is another Redis server (its dir %s, not %s)", addr, got, dir))
	}
	return nil
}

func redisFileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// redisTailFrom is the text of path from byte off on (at most 64 KiB).
func redisTailFrom(path string, off int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if size := redisFileSize(path); size-off > 64<<10 {
		off = size - 64<<10
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// redisLastLines is the last n lines of path.
func redisLastLines(path string, n int) string {
	size := redisFileSize(path)
	b := []byte(redisTailFrom(path, max(0, size-8<<10)))
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// redisInImage starts the image's server on the config file ($0):
// redis-server, or valkey-server in a Valkey image.
const redisInImage = `s=$(command -v redis-server || command -v valkey-server) || ` +
	`{ echo "neither redis-server nor valkey-server is on the image's PATH" >&2; exit 127; }; exec "$s" "$0"`

// checkShim makes sure the container's redis-server loaded the clock
// shim: a library the dynamic loader cannot load (a glibc one in a musl
// image, say) is skipped with a warning, and the clock faults would then
// do nothing.
func (r *Redis) checkShim(p process) error {
	ok, err := processMaps(p.Pid(), r.shimLib)
	if err != nil {
		return fmt.Errorf("check the clock shim in redis %s: %w", r.Name, err)
	}
	if !ok {
		return fmt.Errorf("image %s: redis-server did not load the clock shim (LD_PRELOAD %s); "+
			"it needs a glibc image (a Debian-based one such as redis:7.2-bookworm, not an Alpine/musl one)", r.opts.Image, r.shimLib)
	}
	return nil
}

// Image is the container image the server runs in ("" for a local process).
func (r *Redis) Image() string { return r.opts.Image }

// tails is the last lines of the server's log and stderr, for errors.
func (r *Redis) tails() string {
	var b strings.Builder
	if s := redisLastLines(r.LogPath(), 15); s != "" {
		fmt.Fprintf(&b, "--- %s (last lines)\n%s\n", r.LogPath(), s)
	}
	if s := redisLastLines(filepath.Join(r.Dir, "redis.stderr"), 10); s != "" {
		fmt.Fprintf(&b, "--- %s (last lines)\n%s\n", filepath.Join(r.Dir, "redis.stderr"), s)
	}
	if c, ok := r.Proc().(*Container); ok {
		if s := c.Logs(10); s != "" {
			fmt.Fprintf(&b, "--- container %s (last lines)\n%s\n", c.ID[:12], s)
		}
	}
	if b.Len() == 0 {
		return "(redis wrote no log)"
	}
	return b.String()
}

// redisRDB, redisAOFDir and redisAOF are the server's data, in its dir:
// the RDB snapshot, the dir of the multi-part append-only file (Redis 7's
// default appenddirname: its base, incremental files and manifest), and
// the one-file append-only file of Redis 6 and before.
const (
	redisRDB    = "dump.rdb"
	redisAOFDir = "appendonlydir"
	redisAOF    = "appendonly.aof"
)

// PowerLoss kills the server as a power cut does: kill -9, and then its
// data files lose what no fsync or fdatasync had put on the disk, which
// a kill -9 alone leaves in the OS page cache. Each file is cut back to
// the length it had when its last sync began (the clock shim records
// it), and a file never synced to nothing: what an append-only file
// holds after the cut. It returns the bytes lost; Restart brings the
// server back on what is left.
func (r *Redis) PowerLoss() (int64, error) {
	r.Crash()
	return r.loseUnsynced("power loss")
}

// Shutdown stops the server cleanly and then switches its machine off:
// SHUTDOWN, which with an append-only file flushes and syncs it before
// the process exits (Redis's clean shutdown), then, once the process is
// gone, the files lose what no sync reached, as PowerLoss cuts them: a
// reboot after the stop takes the OS page cache. It returns the bytes
// lost (none when the shutdown synced every write). A server that has
// not exited within RedisStartTimeout is killed, and that is an error.
// Restart brings it back.
func (r *Redis) Shutdown(ctx context.Context) (int64, error) {
	p := r.Proc()
	if p == nil || p.Exited() {
		return 0, fmt.Errorf("shutdown of redis %s: not running", r.Name)
	}
	// The exit closes the connection, which go-redis takes for a network
	// error; a client that retried it would dial a server that is gone.
	// The process's exit, not the command's error, says whether Redis
	// stopped.
	o := r.clientOptions()
	o.MaxRetries = -1
	c := redis.NewClient(o)
	err := c.Shutdown(ctx).Err()
	c.Close()
	select {
	case <-p.Done():
	case <-time.After(RedisStartTimeout):
		r.Crash()
		return 0, fmt.Errorf("shutdown of redis %s: still running %v after SHUTDOWN (%v); killed", r.Name, RedisStartTimeout, err)
	case <-ctx.Done():
		r.Crash()
		return 0, fmt.Errorf("shutdown of redis %s: %w", r.Name, ctx.Err())
	}
	return r.loseUnsynced("shutdown")
}

// loseUnsynced cuts the dead server's data files back to what their syncs
// put on the disk (clockshim.Disk.LoseUnsynced), and returns the bytes it
// cut: the snapshot, the append-only file (one file, or a directory of
// them) and a rewrite's or a snapshot's temporary file. what names the
// fault for errors.
func (r *Redis) loseUnsynced(what string) (int64, error) {
	paths := []string{filepath.Join(r.Dir, redisRDB), filepath.Join(r.Dir, redisAOF)}
	aof, err := os.ReadDir(filepath.Join(r.Dir, redisAOFDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("%s on redis %s: %w", what, r.Name, err)
	}
	for _, e := range aof {
		paths = append(paths, filepath.Join(r.Dir, redisAOFDir, e.Name()))
	}
	tmp, _ := filepath.Glob(filepath.Join(r.Dir, "temp-*"))
	lost, err := r.disk.LoseUnsynced(append(paths, tmp...))
	if err != nil {
		return lost, fmt.Errorf("%s on redis %s: %w", what, r.Name, err)
	}
	return lost, nil
}

// LoseDisk kills the server (kill -9) and deletes its data files, as a
// replaced disk leaves them: the snapshot, the append-only file and a
// rewrite's temporary file. Restart brings it back empty, whatever its
// persistence.
func (r *Redis) LoseDisk() error {
	r.Crash()
	paths := []string{filepath.Join(r.Dir, redisRDB), filepath.Join(r.Dir, redisAOF), filepath.Join(r.Dir, redisAOFDir)}
	tmp, _ := filepath.Glob(filepath.Join(r.Dir, "temp-*"))
	for _, p := range append(paths, tmp...) {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("disk loss on redis %s: %w", r.Name, err)
		}
	}
	return nil
}

// Stop kills the server and waits until it is reaped. Idempotent. The
// clock control file and the client stay usable for Restart.
func (r *Redis) Stop() { r.Crash() }

// Restart starts the server again with the same port, dir, options and
// clock control file (whatever offset or rate it holds stays in force).
// A server still running is crashed first. If another process took the
// port meanwhile, Restart retries for up to a second, then fails.
func (r *Redis) Restart(ctx context.Context) error {
	r.Crash()
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		if err = r.start(ctx); err == nil || !errors.Is(err, errPortInUse) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

// Client is a go-redis client straight to the server (never through a
// proxy), for resets, checks and tests. It survives Restart.
func (r *Redis) Client() *redis.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client == nil {
		r.client = redis.NewClient(r.clientOptions())
	}
	return r.client
}

// clientOptions are the options of a client straight to the server.
func (r *Redis) clientOptions() *redis.Options {
	return &redis.Options{
		Addr:            r.Addr,
		DialTimeout:     time.Second,
		ReadTimeout:     2 * time.Second,
		WriteTimeout:    2 * time.Second,
		DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

// Reset readies the server for the next trial as a new one: the clock
// goes back to real time, a paused server resumes, the data is flushed
// (FLUSHALL; a replica refuses it with READONLY, which is ignored: the
// primary's FLUSHALL reaches it by replication) and so are its cached
// scripts (SCRIPT FLUSH). A server that is not running is an error.
func (r *Redis) Reset(ctx context.Context) error {
	r.Clock.Reset()
	if !r.Running() {
		return fmt.Errorf("reset redis %s: not running", r.Name)
	}
	if r.Paused() {
		if err := r.Resume(); err != nil {
			return err
		}
	}
	err := r.Client().FlushAll(ctx).Err()
	if err != nil && (r.opts.ReplicaOf == "" || !strings.HasPrefix(err.Error(), "READONLY")) {
		return fmt.Errorf("reset redis %s: FLUSHALL: %w", r.Name, err)
	}
	// The script cache too (each server keeps its own): a client's first
	// EVALSHA on a new server is answered NOSCRIPT and sent again as EVAL,
	// a second round trip a story's timing sees; on a server kept from
	// the run before it would not be.
	if err := r.Client().ScriptFlush(ctx).Err(); err != nil {
		return fmt.Errorf("reset redis %s: SCRIPT FLUSH: %w", r.Name, err)
	}
	return nil
}

// Close stops the server and releases the client and the clock mapping.
// The server's dir stays (it belongs to the caller's Dir or to Cleanup).
func (r *Redis) Close() error {
	r.Stop()
	r.mu.Lock()
	c := r.client
	r.client = nil
	r.mu.Unlock()
	var errs []error
	if c != nil {
		errs = append(errs, c.Close())
	}
	errs = append(errs, r.Clock.Close(), r.disk.Close())
	return errors.Join(errs...)
}
