package main

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/entityd/entityd/internal/authn"
	"github.com/entityd/entityd/internal/outbound"
)

// security is what the auth settings turn into.
type security struct {
	auth         authn.Authenticator
	outbound     outbound.Policy
	cors         []string
	admins       []string
	loopbackOnly bool // dev mode on a loopback address: Host checks, loopback origins
}

// buildSecurity checks the auth settings together and builds the authenticator. Dev
// mode on an address others can reach is refused unless asked for explicitly: anyone
// who reaches it could act as any principal.
func buildSecurity(c *config) (*security, error) {
	mode, err := authn.ParseMode(c.Auth)
	if err != nil {
		return nil, err
	}
	sec := &security{outbound: outbound.Policy{AllowPrivate: c.AllowPrivateURLs}}
	if sec.outbound.Allow, err = outbound.ParseAllow(c.OutboundAllow); err != nil {
		return nil, err
	}
	for _, o := range splitList(c.CORSOrigins) {
		if o != "*" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
				return nil, fmt.Errorf("ENTITYD_CORS_ORIGINS: %q is not an origin such as https://app.example.com", o)
			}
		}
		sec.cors = append(sec.cors, strings.TrimSuffix(o, "/"))
	}
	sec.admins = splitList(c.Admins)
	switch mode {
	case authn.ModeDev:
		if c.JWTKeys != "" {
			return nil, fmt.Errorf("ENTITYD_JWT_KEYS is set but the auth mode is dev; set ENTITYD_AUTH=jwt")
		}
		loopback := loopbackAddr(c.Addr)
		if !loopback && !c.AllowInsecureDev {
			return nil, fmt.Errorf("dev mode trusts the Electric-Principal header, so it listens only on loopback; "+
				"%q is not a loopback address (use --addr 127.0.0.1:4437, --auth jwt, or ENTITYD_ALLOW_INSECURE_DEV=true)", c.Addr)
		}
		sec.auth, sec.loopbackOnly = authn.Dev{}, loopback
	case authn.ModeJWT:
		sec.outbound.NoLoopback = true
		clients := outbound.NewPolicyClients(sec.outbound)
		j, err := authn.NewJWT(authn.JWTConfig{Keys: c.JWTKeys, Issuer: c.JWTIssuer, Audience: c.JWTAudience,
			PrincipalClaim: c.JWTPrincipalClaim, Client: func(u *url.URL) *http.Client { return clients.For(u) }})
		if err != nil {
			return nil, err
		}
		sec.auth = j
	}
	return sec, nil
}

// loopbackAddr reports whether a listen address binds only this machine.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
