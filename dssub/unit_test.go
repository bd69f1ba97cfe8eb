package dssub

import (
	"reflect"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"events/*", "events/a", true},
		{"events/*", "events/a/b", false},
		{"events/*", "events", false},
		{"events/*", "other/a", false},
		{"events/**", "events", true},
		{"events/**", "events/a/b/c", true},
		{"**", "anything/at/all", true},
		{"**/main", "a/b/main", true},
		{"**/main", "main", true},
		{"**/main", "a/main/x", false},
		{"a/**/z", "a/z", true},
		{"a/**/z", "a/b/c/z", true},
		{"a/**/z", "a/b/c/y", false},
		{"a/*/c/**", "a/b/c", true},
		{"a/**/b/**/c", "a/x/b/y/b/z/c", true},
		{"/events/*/", "events/a", true},
		{"events/*", "/events//a/", true},
		{"ev*", "evx", false},
		{"ev*", "ev*", true},
		{"a/%2A", "a/*", true},
		{"a/%2A", "a/b", false},
	}
	for _, c := range cases {
		g, err := compileGlob(c.pattern)
		if err != nil {
			t.Fatalf("compile %q: %v", c.pattern, err)
		}
		if got := g.match(splitSegments(c.path)); got != c.want {
			t.Errorf("%q matching %q = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
	for _, bad := range []string{"", "/", strings.Repeat("a/", 65) + "a", strings.Repeat("x", 1025)} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("pattern %q compiled", bad)
		}
	}
	g, _ := compileGlob("events/in/*/x")
	if p := g.literalPrefix(); p != "events/in" {
		t.Errorf("literal prefix %q", p)
	}
}

func TestTokens(t *testing.T) {
	kr := &keyring{hmacs: [][]byte{[]byte("0123456789abcdef0123456789abcdef")}}
	c := tokenClaims{Sub: "s1", Generation: 3, WakeID: "w_1"}
	tok := kr.mintToken(c)
	got, ok := kr.verifyToken(tok)
	if !ok || got != c {
		t.Fatalf("verify own token: %v %+v", ok, got)
	}
	for _, bad := range []string{"", "x", tok + "x", "e30." + strings.SplitN(tok, ".", 2)[1], strings.SplitN(tok, ".", 2)[0] + ".AAAA"} {
		if _, ok := kr.verifyToken(bad); ok {
			t.Errorf("token %q verified", bad)
		}
	}
	other := &keyring{hmacs: [][]byte{[]byte("another key, another key, another")}}
	if _, ok := other.verifyToken(tok); ok {
		t.Error("token verified with another key")
	}
	rotated := &keyring{hmacs: [][]byte{[]byte("new key 0123456789abcdef01234567"), kr.hmacs[0]}}
	if _, ok := rotated.verifyToken(tok); !ok {
		t.Error("token of an older unretired key not verified")
	}
}

func TestCursorOrder(t *testing.T) {
	if !beforeFirst.less(cursor{0, 0}) || (cursor{2, 5}).less(cursor{2, 5}) || !(cursor{2, 5}).less(cursor{2, 6}) {
		t.Fatal("cursor order")
	}
	if beforeFirst.String() != "-1" || (cursor{1, 7}).String() != "0000000000000001_0000000000000007" {
		t.Fatal("cursor strings")
	}
}

// protocolMembers must name every member of a webhook wake's body, or an Enricher could
// add a member that the joined encoding repeats.
func TestProtocolMembersAreTheWakeBody(t *testing.T) {
	typ := reflect.TypeOf(webhookBody{})
	if typ.NumField() != len(protocolMembers) {
		t.Fatalf("webhookBody has %d members, protocolMembers %d", typ.NumField(), len(protocolMembers))
	}
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if !protocolMembers[name] {
			t.Fatalf("protocolMembers lacks %q", name)
		}
	}
}
