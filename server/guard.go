package server

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// guard holds what tells a request from sluice's own pages or a
// non-browser client apart from one a hostile web page made the
// operator's browser send: the host names the server answers to, the
// cross-origin check, and the proxies whose X-Forwarded-* headers count.
type guard struct {
	hosts   map[string]bool // lower-case names besides IP literals and localhost
	cop     *http.CrossOriginProtection
	proxies []netip.Prefix
	// httpsURL: PublicURL is https, so the browser always sees TLS.
	httpsURL bool
}

func newGuard(cfg Config) (*guard, error) {
	g := &guard{hosts: map[string]bool{}, cop: http.NewCrossOriginProtection()}
	if cfg.Listen != "" {
		if h, _, err := net.SplitHostPort(cfg.Listen); err == nil && h != "" {
			g.hosts[normHost(h)] = true
		}
	}
	for i, h := range cfg.AllowedHosts {
		if err := CheckAllowedHost(h); err != nil {
			return nil, fmt.Errorf("server: allowed_hosts[%d]: %w", i, err)
		}
		g.hosts[normHost(h)] = true
	}
	for i, c := range cfg.TrustedProxies {
		p, err := parseCIDR(c)
		if err != nil {
			return nil, fmt.Errorf("server: trusted_proxies[%d] %q: not a CIDR such as 10.0.0.0/8 or an IP address", i, c)
		}
		g.proxies = append(g.proxies, p)
	}
	if cfg.PublicURL != "" {
		u, err := ParsePublicURL(cfg.PublicURL)
		if err != nil {
			return nil, fmt.Errorf("server: public_url: %w", err)
		}
		g.httpsURL = u.Scheme == "https"
		g.hosts[normHost(u.Hostname())] = true
		// A browser too old to send Sec-Fetch-Site sends this Origin,
		// which a proxy that rewrites Host would not match.
		if err := g.cop.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			return nil, fmt.Errorf("server: public_url: %w", err)
		}
	}
	return g, nil
}

// CheckAllowedHost checks one entry of allowed_hosts: a host name alone.
func CheckAllowedHost(h string) error {
	n := normHost(h)
	if n == "" || strings.ContainsAny(n, "/:@ *") {
		return fmt.Errorf("%q: want a host name such as sluice.example.com, without scheme, port or wildcard", h)
	}
	return nil
}

// ParsePublicURL parses public_url: the server's address as browsers
// see it, scheme and host (and port) only.
func ParsePublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("%q: want the address browsers use, such as https://sluice.example.com", s)
	}
	return u, nil
}

// normHost lower-cases a host name and drops a trailing dot, which names
// the same host.
func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

// hostOK reports whether r's Host is one the server answers to. A page
// that rebinds its own DNS name to 127.0.0.1 reaches the server with
// that name in Host; an IP literal or a localhost name cannot be rebound,
// so they are always accepted, as is a request without Host (HTTP/1.0).
func (g *guard) hostOK(r *http.Request) bool {
	h := r.Host
	if h == "" {
		return true
	}
	if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	}
	h = normHost(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || g.hosts[h]
}

// jsonBody reports whether a state-changing request's body, if it has
// one, is JSON. A browser sends text/plain, form and multipart bodies to
// another origin without asking it first (no CORS preflight), so a JSON
// body proves the request is not such a one.
func jsonBody(r *http.Request) (bool, string) {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true, ""
	}
	if r.ContentLength == 0 {
		// No body, as `curl -X POST` (or -d '') sends: nothing to forge,
		// and the cross-origin check still applies.
		return true, ""
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return true, ""
	}
	if ct == "" {
		ct = "none"
	}
	return false, fmt.Sprintf("content-type: want application/json for a request body (got %s)", ct)
}

// fromProxy reports whether r came through one of the trusted proxies.
func (g *guard) fromProxy(r *http.Request) bool {
	a, ok := remoteIP(r.RemoteAddr)
	if !ok {
		return false
	}
	return inAny(g.proxies, a)
}

// secure reports whether the browser reached the server over TLS: its
// own, the public URL's, or a trusted proxy's that says so in
// X-Forwarded-Proto (which any other client could forge).
func (g *guard) secure(r *http.Request) bool {
	if r.TLS != nil || g.httpsURL {
		return true
	}
	if !g.fromProxy(r) {
		return false
	}
	// The proxy nearest to us appends last.
	vals := strings.Split(strings.Join(r.Header.Values("X-Forwarded-Proto"), ","), ",")
	return strings.EqualFold(strings.TrimSpace(vals[len(vals)-1]), "https")
}

// clientAddr is the client the brake on wrong tokens counts: the
// client's behind any trusted proxies, that is the connection's address
// or the rightmost X-Forwarded-For entry that is not a trusted proxy
// (entries left of it are the client's to forge). An IPv6 client counts
// as its /64, which one machine usually has whole.
func (g *guard) clientAddr(r *http.Request) string {
	a, ok := remoteIP(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	if !inAny(g.proxies, a) {
		return brakeKey(a)
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		a = h.Unmap()
		if !inAny(g.proxies, a) {
			break
		}
	}
	return brakeKey(a)
}

func brakeKey(a netip.Addr) string {
	if a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.String()
}

func remoteIP(remote string) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
