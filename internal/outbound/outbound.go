// Package outbound is how entityd makes requests to URLs its clients give it (webhook
// targets, serve endpoints): which URLs it accepts, and clients that connect only where
// those rules allow, checked again on every connection.
package outbound

import (
	"errors"
	"fmt"
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
// ::1) for development, unless private addresses are allowed; in jwt mode, never this
// machine (loopback or any of its interfaces' addresses) unless listed. Unspecified,
// multicast and broadcast addresses are never a destination. The check is made when the
// URL is given and again on every connection (the address a name resolves to can change).

// Policy is which addresses outbound requests may reach.
type Policy struct {
	// AllowPrivate lets URLs reach any address, private networks included
	// (--allow-private-urls).
	AllowPrivate bool
	// NoLoopback refuses this machine's addresses too (jwt mode): a server that strangers
	// can reach must not call its own or its neighbours' local services for them. That
	// is loopback and every address of the machine's interfaces, public ones included.
	NoLoopback bool
	// Allow lists address ranges reachable whatever the other rules say
	// (ENTITYD_OUTBOUND_ALLOW).
	Allow []netip.Prefix
}

// ParseAllow reads a comma-separated list of IP addresses and CIDR ranges ("localhost"
// stands for 127.0.0.0/8 and ::1).
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
		case item == "localhost":
			out = append(out, netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))
		case strings.Contains(item, "/"):
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, fmt.Errorf("outbound allow list: %q is not an address range", item)
			}
			out = append(out, p.Masked())
		default:
			a, err := netip.ParseAddr(item)
			if err != nil {
				return nil, fmt.Errorf("outbound allow list: %q is not an IP address or CIDR range", item)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}

func (p Policy) listed(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, pr := range p.Allow {
		if pr.Contains(ip) {
			return true
		}
	}
	return false
}

// local is whether plain http may reach ip.
func (p Policy) local(ip netip.Addr) bool {
	ip = ip.Unmap()
	if unroutable(ip) {
		return false
	}
	return p.AllowPrivate || p.listed(ip) || (!p.NoLoopback && ip.IsLoopback())
}

// remote is whether https may reach ip.
func (p Policy) remote(ip netip.Addr) bool {
	ip = ip.Unmap()
	if unroutable(ip) {
		return false
	}
	return p.AllowPrivate || p.listed(ip) || (publicAddr(ip) && !p.own(ip))
}

// own reports an address of this machine that the policy refuses (jwt mode).
func (p Policy) own(ip netip.Addr) bool {
	return p.NoLoopback && ownAddrs.has(ip)
}

// CheckURL returns why raw is not an acceptable outbound URL, or "". field names the
// URL in the message (e.g. "webhook.url"). The words never say whether anything
// listens at the address.
func (p Policy) CheckURL(raw, field string) string {
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
	ip, notIP := netip.ParseAddr(host)
	isLocalName := host == "localhost" || strings.HasSuffix(host, ".localhost")
	if notIP == nil && unroutable(ip) {
		return field + " must name a unicast address"
	}
	switch u.Scheme {
	case "http":
		switch {
		case p.AllowPrivate:
			return ""
		case notIP == nil && p.local(ip):
			return ""
		case isLocalName && !p.NoLoopback:
			return ""
		case isLocalName && p.listed(netip.MustParseAddr("127.0.0.1")):
			return ""
		}
		if p.NoLoopback {
			return field + ": http is only allowed for addresses in ENTITYD_OUTBOUND_ALLOW; use https"
		}
		return field + ": http is only allowed for localhost, 127.0.0.0/8 and ::1; use https"
	case "https":
		if p.AllowPrivate {
			return ""
		}
		if isLocalName {
			if p.NoLoopback {
				return field + " must not target this machine"
			}
			return field + ": localhost must use http"
		}
		if notIP == nil && !p.remote(ip) {
			// one message for every refused class: the words do not tell the machine's
			// own addresses from other private ones
			return field + " must not target a private, loopback, link-local or this machine's address"
		}
		return ""
	}
	return field + " must use https"
}

// CheckURL applies the default (dev) policy: https to public hosts, http to this
// machine, or any address when allowPrivate.
func CheckURL(raw, field string, allowPrivate bool) string {
	return Policy{AllowPrivate: allowPrivate}.CheckURL(raw, field)
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
// unless the policy says more) and https URLs (public addresses, unless it says more).
type Clients struct{ public, local *http.Client }

// NewClients returns the clients for the default (dev) policy; allowPrivate reaches any
// address.
func NewClients(allowPrivate bool) *Clients {
	return NewPolicyClients(Policy{AllowPrivate: allowPrivate})
}

// NewPolicyClients returns the clients for p.
func NewPolicyClients(p Policy) *Clients {
	return &Clients{public: newClient(p.remote), local: newClient(p.local)}
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
		DialContext:       dialer.DialContext,
		ForceAttemptHTTP2: true,
		MaxIdleConns:      256,
		// Webhook deliveries run up to 64 at a time (dssub's MaxDeliveries), at most 8 to
		// one receiver by default (MaxDeliveriesPerTarget, configurable): fewer idle
		// connections per host than a receiver's share closed and redialled a connection
		// for most requests under load.
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
