package entityapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"go.uber.org/zap"
)

// Codes of serve-endpoint discovery (the reference's).
const (
	CodeServeEndpointUnreachable  = "SERVE_ENDPOINT_UNREACHABLE"
	CodeServeEndpointNameMismatch = "SERVE_ENDPOINT_NAME_MISMATCH"
)

const (
	serveEndpointTimeout  = 10 * time.Second
	maxManifestBytes      = 1 << 20
	serveEndpointUA       = "entityd-serve-endpoint-discovery"
	serveEndpointURLField = "serve_endpoint"
)

// wantsDiscovery reports a registration that only points at a serve endpoint: a name
// and serve_endpoint, neither description nor creation_schema. The type's definition is
// then the manifest the endpoint answers a PUT with.
func wantsDiscovery(b *jsonbody.Body) bool {
	return b.Present("serve_endpoint") && !b.Present("description") && !b.Present("creation_schema")
}

// discoverManifest PUTs the serve endpoint (no body) and returns its manifest, which must
// name the type being registered. Only URLs the outbound rules allow are called
// (http to this machine, https to public hosts, unless private addresses are allowed).
func (s *handlers) discoverManifest(ctx context.Context, name, endpoint string) (*jsonbody.Body, error) {
	if why := s.cfg.Outbound.CheckURL(endpoint, serveEndpointURLField); why != "" {
		return nil, httpx.BadRequest(why)
	}
	u, _ := url.Parse(endpoint)
	// Every failure answers the same words: a refused port, an unknown host, a resolver's
	// address or a status would make discovery a port scanner and a resolver for any
	// principal. The operator finds the reason in the log.
	unreachable := func(why string, fields ...zap.Field) error {
		s.log.Warn("serve endpoint discovery failed", append([]zap.Field{zap.String("type", name),
			zap.String("host", u.Host), zap.String("reason", why)}, fields...)...)
		return httpx.New(http.StatusBadGateway, CodeServeEndpointUnreachable, "Serve endpoint unreachable")
	}
	ctx, cancel := context.WithTimeout(ctx, serveEndpointTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, endpoint, nil)
	if err != nil {
		return nil, unreachable("request", zap.Error(err))
	}
	req.Header.Set("User-Agent", serveEndpointUA)
	req.Header.Set("Accept", "application/json")
	resp, err := s.outbound.For(u).Do(req)
	if err != nil {
		return nil, unreachable("connect", zap.Error(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil {
		return nil, unreachable("read", zap.Error(err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, unreachable("status", zap.Int("status", resp.StatusCode))
	}
	if len(data) > maxManifestBytes {
		return nil, unreachable("manifest larger than 1 MiB")
	}
	manifest, err := jsonbody.Parse(data)
	if err != nil {
		return nil, unreachable("not a JSON manifest", zap.Error(err))
	}
	var got string
	if raw := manifest.Raw("name"); raw == nil || json.Unmarshal(raw, &got) != nil || got != name {
		return nil, httpx.New(http.StatusBadRequest, CodeServeEndpointNameMismatch,
			"The serve endpoint's manifest is for type "+jsonString(got)+", not "+jsonString(name))
	}
	if !manifest.Present("serve_endpoint") {
		raw, _ := json.Marshal(endpoint)
		manifest.Set("serve_endpoint", raw)
	}
	return manifest, nil
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
