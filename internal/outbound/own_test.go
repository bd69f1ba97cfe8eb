package outbound

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// ownAddresses is every non-loopback, non-link-local address of this machine's
// interfaces: what a URL could use to reach a service bound to 0.0.0.0 here.
func ownAddresses(t *testing.T) []netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatalf("interface addresses: %v", err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := pfx.Addr().Unmap()
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		out = append(out, ip)
	}
	if len(out) == 0 {
		t.Skip("this machine has no non-loopback interface address to test with")
	}
	return out
}

// jwt mode: the machine's own interface addresses are refused, by URL and by
// connection, however public they look; the allow list still reaches them; dev mode
// keeps its rule (https to public addresses).
func TestPolicyRefusesTheHostsOwnAddresses(t *testing.T) {
	strict := Policy{NoLoopback: true}
	for _, ip := range ownAddresses(t) {
		raw := "https://" + netip.AddrPortFrom(ip, 443).String() + "/x"
		if strict.remote(ip) {
			t.Errorf("%s (an address of this machine) reachable under the strict policy", ip)
		}
		if why := strict.CheckURL(raw, "webhook.url"); why == "" {
			t.Errorf("%s accepted under the strict policy", raw)
		}
		allowed := Policy{NoLoopback: true, Allow: []netip.Prefix{netip.PrefixFrom(ip, ip.BitLen())}}
		if why := allowed.CheckURL(raw, "webhook.url"); why != "" {
			t.Errorf("%s refused though allow-listed: %s", raw, why)
		}
		if publicAddr(ip) && !(Policy{}).remote(ip) {
			t.Errorf("dev mode refuses %s, a public address of this machine", ip)
		}
	}
}

// The connection check refuses the machine's own address even when the URL check
// cannot see it (a name resolving to it): a service listening on every address is
// not reached through its public one.
func TestPolicyClientsRefuseTheHostsOwnAddressAtConnect(t *testing.T) {
	ln, err := net.Listen("tcp", ":0") // every address of this machine
	if err != nil {
		t.Fatal(err)
	}
	target := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	target.Listener = ln
	target.StartTLS()
	defer target.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	get := func(c *Clients, raw string) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		u, _ := url.Parse(raw)
		res, err := c.For(u).Do(req)
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	for _, ip := range ownAddresses(t) {
		raw := "https://" + net.JoinHostPort(ip.String(), strconv.Itoa(port)) + "/"
		if err := get(NewPolicyClients(Policy{NoLoopback: true}), raw); !errors.Is(err, errBlockedAddress) {
			t.Errorf("%s: want the address refused at connect, got %v", raw, err)
		}
		// allow-listed: the connection is made (the test server's certificate is not
		// trusted, so the request still fails, but not at the address check)
		allowed := Policy{NoLoopback: true, Allow: []netip.Prefix{netip.PrefixFrom(ip, ip.BitLen())}}
		if err := get(NewPolicyClients(allowed), raw); errors.Is(err, errBlockedAddress) {
			t.Errorf("%s: refused though allow-listed", raw)
		}
	}
}

// An address that only looks public is refused once it is one of the machine's
// (whatever this machine's real addresses are).
func TestPolicyOwnAddressesAreReadAgain(t *testing.T) {
	public := netip.MustParseAddr("93.184.216.34")
	restore := ownAddrs.list
	defer func() { ownAddrs.list = restore; ownAddrs.forget() }()
	ownAddrs.list = func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.IP(public.AsSlice()), Mask: net.CIDRMask(24, 32)}}, nil
	}
	ownAddrs.forget()
	if (Policy{NoLoopback: true}).remote(public) {
		t.Error("an address of this machine reachable under the strict policy")
	}
	if !(Policy{}).remote(public) {
		t.Error("dev mode refuses a public address because it is the machine's")
	}
	ownAddrs.list = func() ([]net.Addr, error) { return nil, nil }
	ownAddrs.forget()
	if !(Policy{NoLoopback: true}).remote(public) {
		t.Error("an address the machine no longer has is still refused")
	}
}

// Unspecified, multicast and broadcast addresses are never a destination, whatever
// the settings: 0.0.0.0 and :: reach this machine's own services.
func TestPolicyRefusesUnroutableAddresses(t *testing.T) {
	everything := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
	for _, p := range []Policy{{}, {NoLoopback: true}, {AllowPrivate: true}, {NoLoopback: true, Allow: everything}} {
		for _, a := range []string{"0.0.0.0", "0.1.2.3", "::", "224.0.0.1", "239.255.255.250", "255.255.255.255", "ff02::1", "::ffff:0.0.0.0"} {
			ip := netip.MustParseAddr(a)
			if p.remote(ip) || p.local(ip) {
				t.Errorf("%+v: %s reachable", p, a)
			}
		}
		for _, u := range []string{"http://0.0.0.0:8080/x", "https://0.0.0.0/x", "http://[::]:9/x", "https://224.0.0.1/x"} {
			if why := p.CheckURL(u, "webhook.url"); why == "" {
				t.Errorf("%+v: %s accepted", p, u)
			}
		}
	}
}
