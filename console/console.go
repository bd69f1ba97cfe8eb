package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/entityd/entityd/internal/httpx"
)

// Prefix is where the console is served.
const Prefix = "/_electric/console"

//go:embed dist
var dist embed.FS

// securityPolicy keeps the page to its own code: no inline script, no other origin, not
// framed. connect-src 'self' covers the API, the streams and the shapes.
const securityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the embedded bundle.
type Handler struct {
	assets map[string]asset // by name under dist/
	index  asset
	start  time.Time
}

// New loads the embedded bundle. It fails only when the binary was built without one.
func New() (*Handler, error) {
	h := &Handler{assets: map[string]asset{}, start: time.Now()}
	err := fs.WalkDir(dist, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := dist.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		h.assets[strings.TrimPrefix(p, "dist/")] = asset{body: body, contentType: contentType(p),
			etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, err
	}
	idx, ok := h.assets["index.html"]
	if !ok {
		return nil, fs.ErrNotExist
	}
	h.index = idx
	return h, nil
}

func contentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	}
	return "application/octet-stream"
}

// Routes registers the console under its prefix (see api.Server.MountRoutes).
func (h *Handler) Routes(r chi.Router, wrap func(httpx.HandlerFunc) http.HandlerFunc) {
	r.Get("/*", h.serve)
	r.Head("/*", h.serve)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == Prefix {
		// Relative links resolve under the prefix only with its slash.
		http.Redirect(w, r, Prefix+"/", http.StatusFound)
		return
	}
	name := strings.TrimPrefix(chi.URLParam(r, "*"), "/")
	a, ok := h.assets[name]
	if !ok || name == "" {
		if path.Ext(name) != "" && name != "index.html" {
			// A missing file is a 404, not the app: a stale cached page asking for an
			// asset of another build should fail visibly.
			http.Error(w, "no such console file: "+name, http.StatusNotFound)
			return
		}
		a = h.index
	}
	hdr := w.Header()
	hdr.Set("Content-Type", a.contentType)
	hdr.Set("Content-Security-Policy", securityPolicy)
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	// The bundle's names do not change between builds: revalidate every time (the ETag
	// makes that a 304).
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	http.ServeContent(w, r, "", h.start, bytes.NewReader(a.body))
}
