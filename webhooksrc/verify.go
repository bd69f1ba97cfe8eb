package webhooksrc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/entityd/entityd/internal/textpolicy"
)

// Bounds of what a delivery's headers may carry.
const (
	MaxDeliveryIDBytes = 128
	MaxEventTypeBytes  = 128
	maxSignatureBytes  = 4096
	// Tolerance is how far a Standard Webhooks timestamp may be from now (replays older
	// than this are refused even when their id was forgotten).
	Tolerance = 5 * time.Minute
)

// ErrUnsigned and ErrForged are deliveries refused for their signature (401): no
// signature where the scheme asks for one, or one that does not verify.
var (
	ErrUnsigned = errors.New("the delivery carries no signature")
	ErrForged   = errors.New("the delivery's signature does not verify")
	ErrStale    = errors.New("the delivery's timestamp is outside the tolerance")
)

// BadDelivery is a signed delivery the server cannot take (400): its id or event type
// missing or malformed.
type BadDelivery struct{ Message string }

func (e *BadDelivery) Error() string { return e.Message }

// Delivery is what a verified delivery's headers say.
type Delivery struct {
	ID        string // the scheme's delivery id: what redeliveries share
	EventType string // "" when the scheme names none
}

// Verify checks a delivery's signature by the source's scheme, with a constant-time
// comparison, before anything of the body is trusted; it returns the delivery's id and
// event type.
func (s *Source) Verify(h http.Header, body []byte, now time.Time) (Delivery, error) {
	if len(s.Secret) == 0 {
		return Delivery{}, ErrForged // a revoked source verifies nothing
	}
	switch s.Scheme {
	case SchemeGitHub:
		return verifyGitHub(s.Secret, h, body)
	case SchemeStandard:
		return verifyStandard(s.Secret, h, body, now)
	}
	return Delivery{}, ErrForged
}

func verifyGitHub(secret []byte, h http.Header, body []byte) (Delivery, error) {
	sig := h.Get("X-Hub-Signature-256")
	if sig == "" {
		return Delivery{}, ErrUnsigned
	}
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok || len(hexSig) != 2*sha256.Size {
		return Delivery{}, ErrForged
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return Delivery{}, ErrForged
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return Delivery{}, ErrForged
	}
	id, err := headerText(h, "X-GitHub-Delivery", MaxDeliveryIDBytes, true)
	if err != nil {
		return Delivery{}, err
	}
	typ, err := headerText(h, "X-GitHub-Event", MaxEventTypeBytes, false)
	return Delivery{ID: id, EventType: typ}, err
}

func verifyStandard(secret []byte, h http.Header, body []byte, now time.Time) (Delivery, error) {
	sigs := h.Get("Webhook-Signature")
	if sigs == "" {
		return Delivery{}, ErrUnsigned
	}
	if len(sigs) > maxSignatureBytes {
		return Delivery{}, ErrForged
	}
	id := h.Get("Webhook-Id")
	ts := h.Get("Webhook-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" || len(id) > MaxDeliveryIDBytes {
		return Delivery{}, ErrForged // what is signed is missing or malformed
	}
	key := standardKey(secret)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	want := m.Sum(nil)
	ok := false
	for _, entry := range strings.Fields(sigs) {
		v, b64, found := strings.Cut(entry, ",")
		if !found || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			ok = true
		}
	}
	if !ok {
		return Delivery{}, ErrForged
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return Delivery{}, ErrStale
	}
	if !textpolicy.Valid(id, textpolicy.Name) {
		return Delivery{}, &BadDelivery{"webhook-id must be UTF-8 without control characters"}
	}
	return Delivery{ID: id}, nil
}

// standardKey is a Standard Webhooks secret's key: the base64 after "whsec_", or the
// secret's bytes as they are.
func standardKey(secret []byte) []byte {
	if rest, ok := strings.CutPrefix(string(secret), "whsec_"); ok {
		if k, err := base64.StdEncoding.DecodeString(rest); err == nil && len(k) > 0 {
			return k
		}
	}
	return secret
}

func headerText(h http.Header, name string, max int, required bool) (string, error) {
	v := h.Get(name)
	switch {
	case v == "" && required:
		return "", &BadDelivery{name + " is required"}
	case len(v) > max:
		return "", &BadDelivery{name + " must be at most " + strconv.Itoa(max) + " bytes"}
	case !textpolicy.Valid(v, textpolicy.Name):
		return "", &BadDelivery{name + " must be UTF-8 without control characters"}
	}
	return v, nil
}
