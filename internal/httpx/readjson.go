package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/entityd/entityd/internal/textpolicy"
)

// CodeInvalidRequest is the code of a request the server cannot read.
const CodeInvalidRequest = "INVALID_REQUEST"

// ReadControlJSON reads a small control body (subscriptions, wake callbacks) into v: at
// most maxBytes (413), UTF-8, one JSON value (numbers as json.Number), an empty body
// read as {}. Every string of such bodies is an identifier or a label, never content,
// so the text rule for identifiers applies to all of them, on the raw bytes (decoding
// has already turned a lone surrogate into U+FFFD).
func ReadControlJSON(w http.ResponseWriter, r *http.Request, v any, maxBytes int64) error {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return New(http.StatusRequestEntityTooLarge, CodeInvalidRequest, "Request body is too large")
		}
		return err
	}
	if err := RequireJSON(r, data); err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	if !utf8.Valid(data) {
		return New(http.StatusBadRequest, CodeInvalidRequest, "Request body must be valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return New(http.StatusBadRequest, CodeInvalidRequest, "Invalid JSON body")
	}
	if _, err := dec.Token(); err != io.EOF { // one JSON value, nothing after it
		return New(http.StatusBadRequest, CodeInvalidRequest, "Invalid JSON body")
	}
	if d := textpolicy.CheckJSON(data, "", textpolicy.Text); len(d) > 0 {
		return New(http.StatusBadRequest, CodeInvalidRequest, "Invalid text at "+d[0].Path+": "+d[0].Message)
	}
	return nil
}

// CodeUnsupportedMediaType answers a JSON endpoint's body of another content type.
const CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"

// RequireJSON refuses a non-empty body that is not declared as JSON (application/json
// or a +json type). Browsers send text/plain, form and untyped bodies across origins
// without asking first (no CORS preflight); JSON they only send after the server
// agreed, so this closes the JSON API to other sites' pages.
func RequireJSON(r *http.Request, data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return New(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
		"The request body must be JSON, sent with Content-Type: application/json")
}
