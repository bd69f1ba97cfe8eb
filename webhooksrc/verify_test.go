package webhooksrc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func ghSign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func stdSign(key []byte, id string, ts int64, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// TestVerifyGitHub: GitHub's X-Hub-Signature-256 over the raw body with the source's
// secret; anything else is unsigned or forged, and a signed delivery needs its id.
func TestVerifyGitHub(t *testing.T) {
	src := &Source{Scheme: SchemeGitHub, Secret: []byte("It's a Secret to Everybody")}
	// GitHub's documented example
	body := "Hello, World!"
	const want = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	require.Equal(t, want, ghSign("It's a Secret to Everybody", body))
	d, err := src.Verify(headers("X-Hub-Signature-256", want, "X-GitHub-Delivery", "id-1", "X-GitHub-Event", "push"), []byte(body), time.Now())
	require.NoError(t, err)
	require.Equal(t, Delivery{ID: "id-1", EventType: "push"}, d)

	for name, tc := range map[string]struct {
		h    http.Header
		body string
		err  error
	}{
		"unsigned":        {headers("X-GitHub-Delivery", "id"), body, ErrUnsigned},
		"other secret":    {headers("X-Hub-Signature-256", ghSign("nope", body), "X-GitHub-Delivery", "id"), body, ErrForged},
		"tampered body":   {headers("X-Hub-Signature-256", want, "X-GitHub-Delivery", "id"), body + "!", ErrForged},
		"sha1 prefix":     {headers("X-Hub-Signature-256", "sha1="+want[7:], "X-GitHub-Delivery", "id"), body, ErrForged},
		"truncated":       {headers("X-Hub-Signature-256", want[:40], "X-GitHub-Delivery", "id"), body, ErrForged},
		"not hex":         {headers("X-Hub-Signature-256", "sha256="+string(make([]byte, 64)), "X-GitHub-Delivery", "id"), body, ErrForged},
		"only the header": {headers("X-Hub-Signature-256", "sha256="), body, ErrForged},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := src.Verify(tc.h, []byte(tc.body), time.Now())
			require.ErrorIs(t, err, tc.err)
		})
	}
	_, err = src.Verify(headers("X-Hub-Signature-256", want), []byte(body), time.Now())
	var bad *BadDelivery
	require.True(t, errors.As(err, &bad), "a signed delivery without its id: %v", err)
	// a revoked source (no secret) verifies nothing, not even an empty HMAC
	_, err = (&Source{Scheme: SchemeGitHub}).Verify(headers("X-Hub-Signature-256", ghSign("", body), "X-GitHub-Delivery", "id"), []byte(body), time.Now())
	require.ErrorIs(t, err, ErrForged)
}

// TestVerifyStandardWebhooks: v1 signatures over id.timestamp.body with the whsec_ key
// (any of several listed may match), within the timestamp tolerance.
func TestVerifyStandardWebhooks(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	src := &Source{Scheme: SchemeStandard, Secret: []byte("whsec_" + base64.StdEncoding.EncodeToString(key))}
	now := time.Unix(1_700_000_000, 0)
	ts := now.Unix()
	body := `{"type":"user.created"}`
	ok := headers("Webhook-Id", "msg_1", "Webhook-Timestamp", strconv.FormatInt(ts, 10),
		"Webhook-Signature", "v1,AAAA "+stdSign(key, "msg_1", ts, body))
	d, err := src.Verify(ok, []byte(body), now)
	require.NoError(t, err)
	require.Equal(t, "msg_1", d.ID)

	_, err = src.Verify(ok, []byte(body), now.Add(6*time.Minute))
	require.ErrorIs(t, err, ErrStale)
	_, err = src.Verify(ok, []byte(body), now.Add(-6*time.Minute))
	require.ErrorIs(t, err, ErrStale)
	_, err = src.Verify(ok, []byte(body+" "), now)
	require.ErrorIs(t, err, ErrForged)
	other := ok.Clone()
	other.Set("Webhook-Id", "msg_2") // the id is signed: a replay under another id fails
	_, err = src.Verify(other, []byte(body), now)
	require.ErrorIs(t, err, ErrForged)
	v2 := ok.Clone()
	v2.Set("Webhook-Signature", "v2,"+stdSign(key, "msg_1", ts, body)[3:])
	_, err = src.Verify(v2, []byte(body), now)
	require.ErrorIs(t, err, ErrForged)
	_, err = src.Verify(headers("Webhook-Id", "msg_1"), []byte(body), now)
	require.ErrorIs(t, err, ErrUnsigned)
	// a secret without the whsec_ prefix is the key's bytes as they are
	raw := &Source{Scheme: SchemeStandard, Secret: key}
	_, err = raw.Verify(ok, []byte(body), now)
	require.NoError(t, err)
}

// TestBudget: a minute's allowance, refilled continuously, per owner.
func TestBudget(t *testing.T) {
	b := newBudget(2, 1000)
	t0 := time.Unix(0, 0)
	ok, _ := b.take("a", 100, t0)
	require.True(t, ok)
	ok, _ = b.take("a", 100, t0)
	require.True(t, ok)
	ok, wait := b.take("a", 100, t0)
	require.False(t, ok)
	require.Equal(t, 30*time.Second, wait, "half a minute buys one delivery at 2 a minute")
	ok, _ = b.take("b", 100, t0)
	require.True(t, ok, "another owner's allowance is its own")
	ok, _ = b.take("a", 100, t0.Add(30*time.Second))
	require.True(t, ok)
	ok, _ = b.take("a", 100, t0.Add(30*time.Second))
	require.False(t, ok, "the refilled delivery is spent")
	ok, wait = b.take("b", 950, t0.Add(time.Second))
	require.False(t, ok, "bytes: about 917 of 1000 left after 100 taken and a second's refill")
	require.Greater(t, wait, time.Duration(0))
	off := newBudget(0, 0)
	for range 1000 {
		ok, _ := off.take("a", 1<<30, t0)
		require.True(t, ok)
	}
}
