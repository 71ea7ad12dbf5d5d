package env

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// ContainerLabel marks every container the harness starts; its value is
// the owning harness process ("o<pid>.<start time>"), so that a later
// start removes the containers of a harness that died (ReapContainers).
const ContainerLabel = "locksim.owner"

// ErrNoDocker says the docker backend found no Docker engine.
var ErrNoDocker = errors.New("no Docker engine answers (run `make docker`, or set DOCKER_HOST)")

// containerSpec is one server's container: host networking, the process
// run as root unless User says otherwise, and each of Binds mounted at
// the same path inside, so that config files, data dirs and the clock
// control file keep their host paths.
type containerSpec struct {
	What    string // "redis A", for errors and the container's name
	Image   string
	Argv    []string // the entrypoint and its arguments
	Env     []string
	Binds   []string // host paths mounted at the same path (":ro" allowed)
	WorkDir string
	User    string // "" is root
}

// Container is a server running in a container of the docker backend. It
// is a process as pause, crash and restart see it: Freeze is the cgroup
// freezer (docker pause), Kill is a forced remove (SIGKILL).
type Container struct {
	What, ID, Image string
	pid             int
	done            chan struct{}
	err             error
}

var (
	dockerMu  sync.Mutex
	dockerCli *testcontainers.DockerClient

	containersMu sync.Mutex
	containers   = map[*Container]struct{}{}
)

// dockerClient connects to the engine once (DOCKER_HOST or the local
// socket, as testcontainers finds it), with testcontainers' reaper (Ryuk)
// turned off: its image is not available without a registry, and the
// harness removes its own containers (Kill, KillAll, ReapContainers).
func dockerClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	dockerMu.Lock()
	defer dockerMu.Unlock()
	if dockerCli != nil {
		return dockerCli, nil
	}
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	// Its per-container lines would land in the middle of a run's
	// narration; a failure comes back as an error.
	tclog.SetDefault(tclog.NewNoopLogger())
	if err := engineOnThisMachine(os.Getenv("DOCKER_HOST")); err != nil {
		return nil, err
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (testcontainers-go: %v)", ErrNoDocker, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w (testcontainers-go: %v)", ErrNoDocker, err)
	}
	dockerCli = cli
	return cli, nil
}

// engineOnThisMachine refuses a DOCKER_HOST on another machine: the
// containers share this machine's network (their servers bind 127.0.0.1,
// where the harness's proxies reach them), the clock shim's control file
// is memory both sides map, and the harness reads /proc to check the shim.
// A unix socket, or tcp:// to a loopback address, is this machine.
func engineOnThisMachine(host string) error {
	if host == "" || strings.HasPrefix(host, "unix://") || strings.HasPrefix(host, "npipe://") {
		return nil
	}
	u, err := url.Parse(host)
	if err == nil && u.Scheme == "tcp" {
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
	}
	return fmt.Errorf("DOCKER_HOST=%s: the docker backend needs an engine on this machine "+
		"(its servers bind 127.0.0.1 on the host network, and share the clock shim's control file and /proc with the harness); "+
		"to spread a sweep over machines, run sim sweep --shard I/N on each and sim sweep merge the results", host)
}

// CheckImage says whether the engine has image, with the way to get it
// when it has not (no registry is reachable: images are built locally).
func CheckImage(ctx context.Context, image string) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		how := "build it or load it into this engine"
		if strings.HasPrefix(image, "locksim/") {
			how = "run `make docker` to build the default images"
		}
		return fmt.Errorf("docker image %s not found: %s", image, how)
	}
	return nil
}

// startContainer starts spec's container and registers it so that
// KillAll removes it.
func startContainer(ctx context.Context, spec containerSpec) (*Container, error) {
	if err := CheckImage(ctx, spec.Image); err != nil {
		return nil, err
	}
	cli, _ := dockerClient(ctx)
	tag, err := ownerTag()
	if err != nil {
		return nil, err
	}
	slug := strings.ReplaceAll(strings.ReplaceAll(spec.What, " ", "-"), "/", "-")
	name := fmt.Sprintf("locksim-%s-%s-%08x", slug, tag, rand.Uint32())
	envMap := map[string]string{}
	for _, kv := range spec.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envMap[k] = v
		}
	}
	req := testcontainers.ContainerRequest{
		Image:      spec.Image,
		Name:       name,
		Entrypoint: spec.Argv[:1],
		Cmd:        spec.Argv[1:],
		Env:        envMap,
		Labels:     map[string]string{ContainerLabel: tag},
		ConfigModifier: func(c *container.Config) {
			c.WorkingDir = spec.WorkDir
			c.User = spec.User
		},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
			hc.Binds = append(hc.Binds, spec.Binds...)
		},
	}
	tc, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
	if tc != nil {
		// Registered before anything else can fail, so that it goes.
		c := &Container{What: spec.What, ID: tc.GetContainerID(), Image: spec.Image, done: make(chan struct{})}
		containersMu.Lock()
		containers[c] = struct{}{}
		containersMu.Unlock()
		go c.watch(cli)
		if err != nil {
			c.Kill()
			return nil, fmt.Errorf("start %s in a container of %s: %w", spec.What, spec.Image, err)
		}
		in, err := cli.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
		if err != nil {
			c.Kill()
			return nil, fmt.Errorf("start %s: inspect: %w", spec.What, err)
		}
		if in.Container.State != nil {
			c.pid = in.Container.State.Pid
		}
		return c, nil
	}
	return nil, fmt.Errorf("start %s in a container of %s: %w", spec.What, spec.Image, err)
}

// watch closes done when the container stops running (or is gone).
func (c *Container) watch(cli *testcontainers.DockerClient) {
	w := cli.ContainerWait(context.Background(), c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case res := <-w.Result:
		if res.StatusCode != 0 {
			c.err = fmt.Errorf("%s: container exited with status %d", c.What, res.StatusCode)
		}
	case err := <-w.Error:
		c.err = err
	}
	close(c.done)
}

// Pid is the pid, on the host, of the process the container started.
func (c *Container) Pid() int { return c.pid }

// Done is closed when the container has stopped.
func (c *Container) Done() <-chan struct{} { return c.done }

// Exited reports whether the container has stopped.
func (c *Container) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Err is why it stopped, if it stopped by itself (nil while it runs).
func (c *Container) Err() error {
	if !c.Exited() {
		return nil
	}
	return c.err
}

// Freeze pauses every process of the container with the cgroup freezer
// (docker pause): its sockets stay open and nothing answers.
func (c *Container) Freeze() error {
	cli, err := dockerClient(context.Background())
	if err != nil {
		return err
	}
	_, err = cli.ContainerPause(context.Background(), c.ID, client.ContainerPauseOptions{})
	return err
}

// Thaw resumes a frozen container (docker unpause).
func (c *Container) Thaw() error {
	cli, err := dockerClient(context.Background())
	if err != nil {
		return err
	}
	_, err = cli.ContainerUnpause(context.Background(), c.ID, client.ContainerUnpauseOptions{})
	return err
}

// Kill removes the container by force (SIGKILL, even when frozen: no
// shutdown, no final fsync) and waits until it has stopped. What it kept
// in a bound host dir stays. Idempotent.
func (c *Container) Kill() {
	containersMu.Lock()
	_, live := containers[c]
	delete(containers, c)
	containersMu.Unlock()
	if !live {
		return
	}
	cli, err := dockerClient(context.Background())
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	select {
	case <-c.done:
	case <-ctx.Done():
	}
}

// Logs is the last n lines the container's process wrote to stdout and
// stderr, for errors.
func (c *Container) Logs(n int) string {
	cli, err := dockerClient(context.Background())
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r, err := cli.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(n)})
	if err != nil {
		return ""
	}
	defer r.Close()
	b, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	return strings.TrimSpace(stripStreamHeaders(b))
}

// stripStreamHeaders drops the 8-byte frame headers of docker's
// multiplexed log stream.
func stripStreamHeaders(b []byte) string {
	var out strings.Builder
	for len(b) >= 8 && (b[0] == 1 || b[0] == 2) && b[1] == 0 && b[2] == 0 && b[3] == 0 {
		n := int(b[4])<<24 | int(b[5])<<16 | int(b[6])<<8 | int(b[7])
		b = b[8:]
		n = min(n, len(b))
		out.Write(b[:n])
		b = b[n:]
	}
	out.Write(b)
	return out.String()
}

// killContainers removes every container this harness started.
func killContainers() {
	containersMu.Lock()
	cs := make([]*Container, 0, len(containers))
	for c := range containers {
		cs = append(cs, c)
	}
	containersMu.Unlock()
	for _, c := range cs {
		c.Kill()
	}
}

// ContainerCount is how many containers this harness started and has not
// removed.
func ContainerCount() int {
	containersMu.Lock()
	defer containersMu.Unlock()
	return len(containers)
}

// ReapContainers removes the containers of harness processes that are no
// longer running (killed with kill -9, say: nothing could remove them
// then), found by ContainerLabel. It returns their names. It touches no
// container of a live harness and none without the label.
func ReapContainers(ctx context.Context) ([]string, error) {
	left, err := labelled(ctx, func(owner string) bool {
		_, alive, ok := ownerAlive("x-" + owner + "-x")
		return ok && !alive
	})
	if err != nil {
		return nil, err
	}
	var reaped []string
	for _, s := range left {
		if _, err := dockerCli.ContainerRemove(ctx, s.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			return reaped, err
		}
		reaped = append(reaped, containerName(s))
	}
	return reaped, nil
}

// OwnContainers lists, by name, the containers the engine holds (running
// or not) that this harness process started: none once it has removed
// them all.
func OwnContainers(ctx context.Context) ([]string, error) {
	tag, err := ownerTag()
	if err != nil {
		return nil, err
	}
	own, err := labelled(ctx, func(owner string) bool { return owner == tag })
	var names []string
	for _, s := range own {
		names = append(names, containerName(s))
	}
	return names, err
}

// labelled lists the containers with ContainerLabel whose owner mine says
// yes to.
func labelled(ctx context.Context, mine func(owner string) bool) ([]container.Summary, error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, err
	}
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", ContainerLabel)})
	if err != nil {
		return nil, err
	}
	var out []container.Summary
	for _, s := range list.Items {
		if mine(s.Labels[ContainerLabel]) {
			out = append(out, s)
		}
	}
	return out, nil
}

func containerName(s container.Summary) string {
	if len(s.Names) > 0 {
		return strings.TrimPrefix(s.Names[0], "/")
	}
	return s.ID[:12]
}

// processMaps reports whether the process pid has path mapped (a
// preloaded library, say).
func processMaps(pid int, path string) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return false, err
	}
	return strings.Contains(string(b), path), nil
}
