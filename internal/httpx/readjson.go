package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
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
