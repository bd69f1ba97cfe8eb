package runtime

import (
	"crypto/ed25519"
	"encoding/base64"
	"strconv"
	"testing"
	"time"
)

// FuzzParseSignature: any Webhook-Signature header parses without panicking; what is
// accepted has a key id, an Ed25519-sized signature and a time within the skew; a header
// as entityd writes it is accepted with exactly its parts.
func FuzzParseSignature(f *testing.F) {
	now := time.Unix(1_795_000_000, 0)
	sig := base64.RawURLEncoding.EncodeToString(make([]byte, ed25519.SignatureSize))
	good := "t=1795000000,kid=ds_k1,ed25519=" + sig
	for _, s := range []string{good, "", "t=1,kid=a,ed25519=" + sig, "t=1795000000,kid=,ed25519=x",
		"kid=a,t=1795000010, ed25519=" + sig, "t=-9223372036854775808,kid=a,ed25519=" + sig, "t=1795000000,kid=a=b,ed25519=" + sig} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		got, err := parseSignature(header, now)
		if err != nil {
			return
		}
		if got.kid == "" || len(got.sig) != ed25519.SignatureSize {
			t.Fatalf("accepted %q as %+v", header, got)
		}
		ts, perr := strconv.ParseInt(got.t, 10, 64)
		if perr != nil {
			t.Fatalf("accepted time %q", got.t)
		}
		if d := now.Sub(time.Unix(ts, 0)); d > signatureSkew || d < -signatureSkew {
			t.Fatalf("accepted a time %v away", d)
		}
	})
}

func TestParseSignatureRefusesReplays(t *testing.T) {
	sig := base64.RawURLEncoding.EncodeToString(make([]byte, ed25519.SignatureSize))
	now := time.Unix(1_795_000_000, 0)
	got, err := parseSignature("t=1795000000,kid=ds_k1,ed25519="+sig, now)
	if err != nil || got.kid != "ds_k1" || got.t != "1795000000" {
		t.Fatalf("a good header: %+v, %v", got, err)
	}
	for _, h := range []string{
		"t=1794999000,kid=ds_k1,ed25519=" + sig, // 1,000 s old
		"t=1795001000,kid=ds_k1,ed25519=" + sig, // from the future
		"t=1795000000,kid=ds_k1,ed25519=" + sig[:10],
		"t=1795000000,ed25519=" + sig,
	} {
		if _, err := parseSignature(h, now); err == nil {
			t.Errorf("accepted %q", h)
		}
	}
}
