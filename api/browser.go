package api

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Browser safety. A page on another site can make a browser send requests here with
// the user's network position (this machine, an intranet): CORS decides what it may
// read, and three checks decide what it may do.
//   - Origin: a request that carries an Origin which is neither this server's own nor
//     an allowed one is refused before any handler runs if it could change anything
//     (every method but GET, HEAD and OPTIONS).
//   - Content type: JSON endpoints take only JSON bodies (httpx.RequireJSON), which a
//     browser sends across origins only after a preflight that CORS answers.
//   - Host: in dev mode on loopback, a Host that is not a loopback name is refused, so
//     a DNS name rebound to 127.0.0.1 does not make the server same-origin with an
//     attacker's page.

// commonHeaders sets the security headers, answers CORS preflights, and applies the
// Origin and Host checks.
func (s *Server) commonHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		if s.cfg.LoopbackOnly && !loopbackHost(r.Host) {
			h.Set("Connection", "close") // the body is not read: do not wait for it
			writeError(w, newError(http.StatusMisdirectedRequest, "MISDIRECTED_REQUEST",
				"This development server answers only to localhost, 127.0.0.1 and [::1]"))
			return
		}
		origin := r.Header.Get("Origin")
		allowed := origin != "" && s.originAllowed(origin, r)
		if allowed {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		}
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions {
			// What a request may carry is no secret; whether this origin may send it at
			// all is Access-Control-Allow-Origin, set above only for allowed origins.
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if origin != "" && !allowed && !safeMethod(r.Method) {
			h.Set("Connection", "close")
			writeError(w, newError(http.StatusForbidden, CodeForbidden,
				"Requests from origin "+origin+" are not allowed (ENTITYD_CORS_ORIGINS)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// originAllowed: the server's own origin, a configured one, or in dev mode on loopback
// any loopback origin.
func (s *Server) originAllowed(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // includes "null" (sandboxed frames, file: pages)
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true // same origin (the console the server serves)
	}
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return s.cfg.LoopbackOnly && loopbackHost(u.Host)
}

// loopbackHost reports whether a Host header (host[:port]) names this machine:
// localhost, *.localhost, 127.0.0.0/8 or ::1.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
