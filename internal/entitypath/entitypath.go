// Package entitypath builds the paths of an entity and of its streams, in one place:
// every package that names an entity's streams (entity, slashcmd, wake, api) asks here.
package entitypath

import "strings"

const (
	// MainSuffix ends the path of every entity's main stream.
	MainSuffix = "/main"
	// CollectionSuffix ends the path of an entity's slash-command collection stream.
	CollectionSuffix = "/slash-commands"
)

// URL is the URL of entity id of type typ.
func URL(typ, id string) string { return "/" + typ + "/" + id }

// Main is the path of the main stream of the entity at url.
func Main(url string) string { return url + MainSuffix }

// Collection is the path of the slash-command collection stream of the entity at url.
func Collection(url string) string { return url + CollectionSuffix }

// OfMain is the URL of the entity whose main stream is at path.
func OfMain(path string) (url string, ok bool) { return strings.CutSuffix(path, MainSuffix) }

// OfCollection is the URL of the entity whose collection stream is at path.
func OfCollection(path string) (url string, ok bool) {
	return strings.CutSuffix(path, CollectionSuffix)
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
	return parts[0], URL(parts[0], parts[1]), kind, true
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
