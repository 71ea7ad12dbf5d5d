package cli

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// loadWatch samples the machine's 1-minute load average every few
// seconds, keeping the highest seen, until stop.
type loadWatch struct {
	mu   sync.Mutex
	max  float64
	done chan struct{}
	wg   sync.WaitGroup
}

// loadEvery is how often a loadWatch samples.
const loadEvery = 5 * time.Second

func watchLoad() *loadWatch {
	w := &loadWatch{done: make(chan struct{})}
	w.sample()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(loadEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				w.sample()
			case <-w.done:
				return
			}
		}
	}()
	return w
}

func (w *loadWatch) sample() {
	if l, ok := loadAverage(); ok {
		w.mu.Lock()
		w.max = max(w.max, l)
		w.mu.Unlock()
	}
}

// stop ends the watch and returns the highest load seen (its last
// sample included).
func (w *loadWatch) stop() float64 {
	close(w.done)
	w.wg.Wait()
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

// loadAverage is /proc/loadavg's 1-minute figure.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	l, err := strconv.ParseFloat(f[0], 64)
	return l, err == nil
}
