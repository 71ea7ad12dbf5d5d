package env

import (
	"fmt"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// Retarget points the link at another server: the proxy stops (every
// connection through it is closed, so clients see their connections
// reset), takes the new upstream, and listens again on the same address
// if it was enabled. Its toxics stay. This is how a failover moves a
// client's path to the new primary, as a virtual IP or a Sentinel-aware
// client would.
func (l *Link) Retarget(upstream string) error {
	l.proxy.Lock()
	listen, enabled := l.proxy.Listen, l.proxy.Enabled
	l.proxy.Unlock()
	if err := l.proxy.Update(&toxiproxy.Proxy{Listen: listen, Upstream: upstream, Enabled: enabled}); err != nil {
		return fmt.Errorf("link %s: retarget to %s: %w", l.Name, upstream, err)
	}
	l.Upstream = upstream
	return nil
}
