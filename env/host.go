package env

// The hosts a run's servers can run on: a scenario's backend field, sim's
// --backend, a sweep's and a run's record of where they ran.
const (
	// HostLocal runs them as child processes on this machine (the default).
	HostLocal = "local"
	// HostDocker runs them in containers, through testcontainers-go.
	HostDocker = "docker"
)
