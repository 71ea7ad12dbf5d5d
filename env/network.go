package env

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Network is an in-process toxiproxy server holding one proxy per
// (client, node) link, so each link can be cut, slowed or reset alone.
// The proxies are driven through toxiproxy's Go API directly: there is no
// HTTP listener to leak.
type Network struct {
	server *toxiproxy.ApiServer
	mu     sync.Mutex
	links  map[string]*Link
}

// Link is one proxy: a client's path to one server.
type Link struct {
	// Name is "c<client>-<node>", e.g. "c1-A".
	Name string
	// Listen is the proxy's address on 127.0.0.1; the client dials it.
	Listen string
	// Upstream is the server's real address.
	Upstream string
	proxy    *toxiproxy.Proxy
	net      *Network
}

// NewNetwork starts an empty in-process toxiproxy server.
func NewNetwork() *Network {
	s := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	return &Network{server: s, links: map[string]*Link{}}
}

// LinkName names the link from client c to node n.
func LinkName(client int, node string) string { return fmt.Sprintf("c%d-%s", client, node) }

// AddLink starts a proxy on a free 127.0.0.1 port forwarding to upstream.
func (n *Network) AddLink(name, upstream string) (*Link, error) {
	p := toxiproxy.NewProxy(n.server, name, "127.0.0.1:0", upstream)
	if err := n.server.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	l := &Link{Name: name, Listen: p.Listen, Upstream: upstream, proxy: p, net: n}
	n.mu.Lock()
	n.links[name] = l
	n.mu.Unlock()
	return l, nil
}

// Link finds a link by name.
func (n *Network) Link(name string) (*Link, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.links[name]
	if !ok {
		return nil, fmt.Errorf("no link %q in this run", name)
	}
	return l, nil
}

// Links lists the links, sorted by name.
func (n *Network) Links() []*Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*Link, 0, len(n.links))
	for _, l := range n.links {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Disable closes the proxy's listener and every connection through it:
// the client sees its connections reset and new ones refused.
func (l *Link) Disable() { l.proxy.Stop() }

// Enable listens again on the same address.
func (l *Link) Enable() error {
	if l.Enabled() {
		return nil
	}
	return l.proxy.Start()
}

// Enabled reports whether the proxy accepts connections.
func (l *Link) Enabled() bool {
	l.proxy.Lock()
	defer l.proxy.Unlock()
	return l.proxy.Enabled
}

// AddToxic adds a toxiproxy toxic: typ is latency, timeout, reset_peer...;
// stream is "upstream" (client to server) or "downstream".
func (l *Link) AddToxic(name, typ, stream string, attrs map[string]any) error {
	body, err := json.Marshal(map[string]any{
		"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs,
	})
	if err != nil {
		return err
	}
	if _, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return fmt.Errorf("link %s: toxic %s: %w", l.Name, typ, err)
	}
	return nil
}

// RemoveToxic removes a toxic added by AddToxic.
func (l *Link) RemoveToxic(name string) error {
	return l.proxy.Toxics.RemoveToxic(context.Background(), name)
}

// Remove stops the named links' proxies and forgets them (a run that
// lends servers kept for the next one removes its clients' links).
func (n *Network) Remove(names ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, name := range names {
		if _, ok := n.links[name]; ok {
			_ = n.server.Collection.Remove(name)
			delete(n.links, name)
		}
	}
}

// Close stops every proxy.
func (n *Network) Close() {
	_ = n.server.Collection.Clear()
}
