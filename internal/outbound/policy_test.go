package outbound

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// jwt mode: no loopback, private or link-local address, by URL or by connection,
// unless the allow list names it.
func TestPolicyWithoutLoopback(t *testing.T) {
	p := Policy{NoLoopback: true}
	for _, u := range []string{
		"http://localhost:8080/x", "http://127.0.0.1/x", "http://[::1]:9/x", "http://app.localhost/x",
		"https://localhost/x", "https://127.0.0.1/x", "https://10.0.0.1/x", "https://192.168.1.1/x",
		"https://172.16.5.5/x", "https://169.254.169.254/latest/meta-data", "https://[fe80::1]/x",
		"https://[fd12::1]/x", "https://100.64.1.1/x", "https://[::ffff:127.0.0.1]/x", "http://example.com/x",
	} {
		if why := p.CheckURL(u, "webhook.url"); why == "" {
			t.Errorf("%s accepted", u)
		} else if strings.Contains(why, "refused") || strings.Contains(why, "listen") {
			t.Errorf("%s: the reason must not speak of the port: %s", u, why)
		}
	}
	if why := p.CheckURL("https://example.com/x", "webhook.url"); why != "" {
		t.Errorf("a public https URL refused: %s", why)
	}

	allow, err := ParseAllow("10.1.0.0/16, 192.168.7.7, localhost")
	if err != nil {
		t.Fatal(err)
	}
	p.Allow = allow
	for _, u := range []string{"https://10.1.2.3/x", "http://10.1.2.3/x", "https://192.168.7.7/x", "http://127.0.0.1:9/x", "http://localhost:9/x"} {
		if why := p.CheckURL(u, "webhook.url"); why != "" {
			t.Errorf("%s refused though allowed: %s", u, why)
		}
	}
	for _, u := range []string{"https://10.2.0.1/x", "https://192.168.7.8/x"} {
		if why := p.CheckURL(u, "webhook.url"); why == "" {
			t.Errorf("%s accepted outside the allow list", u)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "1.2.3"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) accepted", bad)
		}
	}
}

// The dial check refuses what the URL check could not see: a name that resolves to a
// refused address, and a redirect to one (redirects are never followed at all).
func TestPolicyClientsRefuseAtConnect(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer target.Close()
	u, _ := url.Parse(target.URL) // http://127.0.0.1:port

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	get := func(c *Clients, raw string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		parsed, _ := url.Parse(raw)
		return c.For(parsed).Do(req)
	}

	// dev: loopback reachable
	if res, err := get(NewPolicyClients(Policy{}), target.URL); err != nil {
		t.Fatalf("dev policy cannot reach loopback: %v", err)
	} else {
		res.Body.Close()
	}
	// jwt: the same address refused at connect, by IP and by a name that resolves to it
	strict := NewPolicyClients(Policy{NoLoopback: true})
	for _, raw := range []string{target.URL, "http://localhost:" + u.Port()} {
		if res, err := get(strict, raw); err == nil {
			res.Body.Close()
			t.Errorf("%s reached under the strict policy", raw)
		}
	}
	// allowed explicitly: reachable again
	allow, _ := ParseAllow("127.0.0.1")
	if res, err := get(NewPolicyClients(Policy{NoLoopback: true, Allow: allow}), target.URL); err != nil {
		t.Errorf("allow-listed loopback refused: %v", err)
	} else {
		res.Body.Close()
	}

	// a redirect to a refused address is not followed: the 3xx is the answer
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
	}))
	defer redirector.Close()
	res, err := get(NewPolicyClients(Policy{}), redirector.URL)
	if err != nil {
		t.Fatalf("redirector: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		t.Errorf("redirect followed: %d", res.StatusCode)
	}
}

func TestPolicyAddressClasses(t *testing.T) {
	p := Policy{NoLoopback: true}
	for _, a := range []string{"127.0.0.1", "::1", "10.0.0.1", "172.31.0.1", "192.168.0.1", "169.254.0.1", "fe80::1",
		"fc00::1", "100.64.0.1", "0.0.0.0", "::", "224.0.0.1", "::ffff:10.0.0.1"} {
		ip := netip.MustParseAddr(a)
		if p.remote(ip) || p.local(ip) {
			t.Errorf("%s reachable under the strict policy", a)
		}
	}
	if !p.remote(netip.MustParseAddr("93.184.216.34")) {
		t.Error("a public address refused")
	}
}
