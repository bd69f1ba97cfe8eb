// Package outbound is how entityd makes requests to URLs its clients give it (webhook
// targets, serve endpoints): which URLs it accepts, and clients that connect only where
// those rules allow, checked again on every connection.
package outbound

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// A client must not turn the server into a proxy into its own network: an outbound URL
// is https to a public host, or plain http to the local machine (localhost, 127.0.0.0/8,
// ::1) for development, unless private addresses are allowed. The check is made when the
// URL is given and again on every connection (the address a name resolves to can change).

// CheckURL returns why raw is not an acceptable outbound URL, or "". field names the
// URL in the message (e.g. "webhook.url").
func CheckURL(raw, field string, allowPrivate bool) string {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return field + " must be an absolute http(s) URL"
	}
	if u.User != nil {
		return field + " must not carry credentials"
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return field + " must name a host"
	}
	switch u.Scheme {
	case "http":
		if allowPrivate || isLoopbackHost(host) {
			return ""
		}
		return field + ": http is only allowed for localhost, 127.0.0.0/8 and ::1; use https"
	case "https":
		if allowPrivate {
			return ""
		}
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			return field + ": localhost must use http"
		}
		if ip, err := netip.ParseAddr(host); err == nil && !publicAddr(ip) {
			return field + " must not target a private, loopback or link-local address"
		}
		return ""
	}
	return field + " must use https"
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can reach IPv4 private space
}

// publicAddr reports whether ip is a globally routable unicast address.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

var errBlockedAddress = errors.New("outbound: the host resolves to an address entityd may not reach")

// Clients are the two clients outbound requests use: http URLs (only the local machine,
// unless private addresses are allowed) and https URLs (public addresses, or any).
type Clients struct{ public, local *http.Client }

// NewClients returns the clients for the rule allowPrivate selects.
func NewClients(allowPrivate bool) *Clients {
	if allowPrivate {
		c := newClient(func(netip.Addr) bool { return true })
		return &Clients{public: c, local: c}
	}
	return &Clients{public: newClient(publicAddr), local: newClient(func(ip netip.Addr) bool { return ip.IsLoopback() })}
}

// For is the client for a request to u.
func (c *Clients) For(u *url.URL) *http.Client {
	if u.Scheme == "http" {
		return c.local
	}
	return c.public
}

// newClient returns a client whose connections only go to addresses allow accepts.
// It follows no redirects (a 3xx is a failure) and uses no proxy.
func newClient(allow func(netip.Addr) bool) *http.Client {
	dialer := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return errBlockedAddress
			}
			ip, err := netip.ParseAddr(host)
			if err != nil || !allow(ip.Unmap()) {
				return errBlockedAddress
			}
			return nil
		},
	}
	tr := &http.Transport{
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
