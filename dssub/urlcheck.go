package dssub

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

// Webhook targets. A subscription must not turn the server into a proxy into its own
// network: a webhook URL is https to a public host, or plain http to the local machine
// (localhost, 127.0.0.0/8, ::1) for development. The check is made when the subscription
// is created and again on every connection (the address a name resolves to can change).

// checkWebhookURL returns why raw is not an acceptable webhook URL, or "".
func checkWebhookURL(raw string, allowPrivate bool) string {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return "webhook.url must be an absolute http(s) URL"
	}
	if u.User != nil {
		return "webhook.url must not carry credentials"
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return "webhook.url must name a host"
	}
	switch u.Scheme {
	case "http":
		if allowPrivate || isLoopbackHost(host) {
			return ""
		}
		return "http webhook URLs are only allowed for localhost, 127.0.0.0/8 and ::1; use https"
	case "https":
		if allowPrivate {
			return ""
		}
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			return "localhost webhook URLs must use http"
		}
		if ip, err := netip.ParseAddr(host); err == nil && !publicAddr(ip) {
			return "webhook.url must not target a private, loopback or link-local address"
		}
		return ""
	}
	return "webhook.url must use https"
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

var errBlockedAddress = errors.New("dssub: webhook host resolves to an address webhooks may not reach")

// newWebhookClient returns a client whose connections only go to addresses allow accepts.
// It follows no redirects (a 3xx is a failed delivery) and uses no proxy.
func newWebhookClient(allow func(netip.Addr) bool) *http.Client {
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
