// Package entitypath builds the paths of an entity and of its streams, in one place:
// every package that names an entity's streams (entity, slashcmd, wake, api) asks here.
package entitypath

import (
	"net/url"
	"strings"
)

const (
	// MainSuffix ends the path of every entity's main stream.
	MainSuffix = "/main"
	// CollectionSuffix ends the path of an entity's slash-command collection stream.
	CollectionSuffix = "/slash-commands"
)

// PrincipalType is the built-in type of principal entities. A principal entity's URL
// is Electric's: /principal/<principal key, percent-encoded as encodeURIComponent does>
// (/principal/user%3Aada), the same string as the created_by and from of what that
// principal does. Its streams live at the decoded path (/principal/user:ada/main),
// which is what a request for the URL's stream names once the server has decoded it.
const PrincipalType = "principal"

const principalPrefix = "/" + PrincipalType + "/"

// URL is the URL of entity id of type typ (id as decoded from a request path).
func URL(typ, id string) string {
	if typ == PrincipalType {
		return principalPrefix + EncodeURIComponent(id)
	}
	return "/" + typ + "/" + id
}

// Main is the path of the main stream of the entity at url.
func Main(url string) string { return streamBase(url) + MainSuffix }

// Collection is the path of the slash-command collection stream of the entity at url.
func Collection(url string) string { return streamBase(url) + CollectionSuffix }

// OfMain is the URL of the entity whose main stream is at path.
func OfMain(path string) (url string, ok bool) {
	base, ok := strings.CutSuffix(path, MainSuffix)
	return canonical(base), ok
}

// OfCollection is the URL of the entity whose collection stream is at path.
func OfCollection(path string) (url string, ok bool) {
	base, ok := strings.CutSuffix(path, CollectionSuffix)
	return canonical(base), ok
}

// streamBase is where the streams of the entity at u live: u itself, or for a
// principal entity its decoded form.
func streamBase(u string) string {
	rest, ok := strings.CutPrefix(u, principalPrefix)
	if !ok || !strings.Contains(rest, "%") {
		return u
	}
	if dec, err := url.PathUnescape(rest); err == nil {
		return principalPrefix + dec
	}
	return u
}

// canonical is the entity URL whose streams live under base (streamBase's inverse).
func canonical(base string) string {
	if rest, ok := strings.CutPrefix(base, principalPrefix); ok {
		return principalPrefix + EncodeURIComponent(rest)
	}
	return base
}

// Stream kinds an entity owns.
const (
	KindMain       = "main"
	KindCollection = "collection"
)

// Parse reads a stream path shaped like an entity's stream: "/<type>/<id>/main" or
// "/<type>/<id>/slash-commands", exactly three segments. Whether it is one depends on
// whether <type> is a registered entity type; the caller asks.
func Parse(path string) (typ, url, kind string, ok bool) {
	rest, found := strings.CutPrefix(path, "/")
	if !found {
		return "", "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", "", false
	}
	switch "/" + parts[2] {
	case MainSuffix:
		kind = KindMain
	case CollectionSuffix:
		kind = KindCollection
	default:
		return "", "", "", false
	}
	return parts[0], canonical("/" + parts[0] + "/" + parts[1]), kind, true
}

// RunnerWake is the default wake stream of runner id; such paths are the server's to
// create (a runner's registration), never a client's.
func RunnerWake(id string) string { return "/runners/" + id + "/wake" }

// IsRunnerWake reports whether path has the shape of a runner's default wake stream,
// "/runners/<id>/wake".
func IsRunnerWake(path string) bool {
	rest, ok := strings.CutPrefix(path, "/runners/")
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(rest, "/wake")
	return ok && id != "" && !strings.Contains(id, "/")
}

// EncodeURIComponent escapes s as JavaScript's encodeURIComponent does (every byte but
// letters, digits and -_.!~*'()): how Electric spells a principal's URL. (Here, where
// the SDK may link it; internal/principal uses it too.)
func EncodeURIComponent(s string) string {
	const unreserved = "-_.!~*'()"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(unreserved, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		const hex = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}
