// Package httpx is entityd's one HTTP response vocabulary: the error envelope
// {"error":{"code","message","details"?,...}}, JSON answers, handlers that return an
// error, and the request helpers every route needs. The api package routes and answers
// failures with it; packages that serve routes through api (dssub) speak it too, so a
// client sees one behaviour everywhere.
package httpx

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/validation"
)

// HandlerFunc is a handler that reports failure by returning an error: an *Error is
// written as its envelope; the router decides what anything else becomes (a 503 while
// the database is away, a 499 for a client that left, a logged 500).
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Error is an answer other than success: an HTTP status and the error envelope.
// Extra members are written beside code and message (e.g. "generation" of a FENCED).
type Error struct {
	Status  int
	Code    string
	Message string
	Details validation.Details
	Extra   map[string]any
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New is an Error with a status, a code and a message.
func New(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// WithDetails sets the {path,message} details of e.
func (e *Error) WithDetails(d validation.Details) *Error {
	e.Details = d
	return e
}

// WithExtra adds members to e's envelope.
func (e *Error) WithExtra(extra map[string]any) *Error {
	e.Extra = extra
	return e
}

// WriteError writes e as the error envelope: code, message, details when there are
// any, then the extra members in name order.
func WriteError(w http.ResponseWriter, e *Error) {
	var body rawjson.Object
	body.String("code", e.Code).String("message", e.Message)
	if len(e.Details) > 0 {
		d, _ := json.Marshal(e.Details)
		body.Raw("details", d)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Extra)) {
		v, _ := json.Marshal(e.Extra[k])
		body.Raw(k, v)
	}
	var env rawjson.Object
	env.Raw("error", body.Bytes())
	data := env.Bytes()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(data)
}

// WriteJSON writes v as a JSON answer.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		WriteError(w, New(http.StatusInternalServerError, "INTERNAL_SERVER_ERROR", "Internal server error"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// Bearer is the token of an "Authorization: Bearer <token>" header ("" without one).
func Bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "Bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

type originKey struct{}

// WithOrigin records on ctx the origin (scheme://host) a request reached the server at,
// for code that builds URLs for the client without the request at hand.
func WithOrigin(ctx context.Context, origin string) context.Context {
	return context.WithValue(ctx, originKey{}, origin)
}

// OriginOf is the origin WithOrigin recorded, or "".
func OriginOf(ctx context.Context) string {
	o, _ := ctx.Value(originKey{}).(string)
	return o
}

// RequestOrigin is the scheme and host a client reached the server at (the scheme from
// X-Forwarded-Proto when a proxy terminates TLS).
func RequestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host
}

// EqualTokens compares two secrets in time that does not depend on where they differ.
func EqualTokens(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
