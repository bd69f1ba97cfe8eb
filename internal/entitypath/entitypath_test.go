package entitypath

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPrincipalPaths: a principal entity's URL is Electric's (the key encoded as
// encodeURIComponent does), its streams live at the decoded path, and each maps back.
func TestPrincipalPaths(t *testing.T) {
	url := URL(PrincipalType, "user:ada@example.com")
	if url != "/principal/user%3Aada%40example.com" {
		t.Fatalf("URL: %s", url)
	}
	if m := Main(url); m != "/principal/user:ada@example.com/main" {
		t.Fatalf("Main: %s", m)
	}
	if c := Collection(url); c != "/principal/user:ada@example.com/slash-commands" {
		t.Fatalf("Collection: %s", c)
	}
	// stream paths are the decoded form (a request's path, once the server decoded it)
	if got, ok := OfMain("/principal/user:ada@example.com/main"); !ok || got != url {
		t.Fatalf("OfMain = %s %v", got, ok)
	}
	if got, _ := OfMain(Main(URL(PrincipalType, "agent:%41"))); got != "/principal/agent%3A%2541" {
		t.Fatalf("a key holding %%41 keeps it: %s", got)
	}
	typ, got, kind, ok := Parse("/principal/user:ada@example.com/main")
	if !ok || typ != PrincipalType || got != url || kind != KindMain {
		t.Fatalf("Parse: %s %s %s %v", typ, got, kind, ok)
	}
	// other entities are unchanged
	if URL("chat", "a:b") != "/chat/a:b" || Main("/chat/a:b") != "/chat/a:b/main" {
		t.Fatal("a plain entity's paths changed")
	}
	if got, _ := OfMain("/chat/a%3Ab/main"); got != "/chat/a%3Ab" {
		t.Fatalf("a plain entity's URL is taken as written: %s", got)
	}
}

// FuzzPrincipalPaths: for any principal key without '/', the stream path of its entity
// maps back to the entity's URL, and the URL holds no character a path would split on.
func FuzzPrincipalPaths(f *testing.F) {
	for _, s := range []string{"user:ada", "service:ops@x", "agent:%41", "user:a b", "system:dev-local", "user:é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if key == "" || strings.Contains(key, "/") || !utf8.ValidString(key) {
			return
		}
		url := URL(PrincipalType, key)
		if strings.ContainsAny(url[len("/principal/"):], "/?#: ") {
			t.Fatalf("URL %q leaves a separator unencoded", url)
		}
		main := Main(url)
		if main != "/principal/"+key+"/main" {
			t.Fatalf("Main(%q) = %q", url, main)
		}
		if back, ok := OfMain(main); !ok || back != url {
			t.Fatalf("OfMain(Main(%q)) = %q", url, back)
		}
	})
}
