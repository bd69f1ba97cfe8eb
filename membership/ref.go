package membership

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf16"
)

// Prefix is where tag-membership streams live: /_entities/<source ref>.
const Prefix = "/_entities/"

// SourceRef is the observation of tags made for a principal: the runtime's tag hash
// (64-bit FNV-1a over the UTF-16 code units of JSON.stringify of the tags, keys sorted)
// followed, as in Electric Agents, by a hash of the principal, so that every principal
// has a stream of its own that shows only the entities it may read.
func SourceRef(tags map[string]string, principalKind, principalURL string) string {
	return hashString(stringify(tags)) + "-" + hashString(stringify(struct {
		Kind string `json:"principalKind"`
		URL  string `json:"principalUrl"`
	}{principalKind, principalURL}))
}

// stringify is JSON.stringify for what it is given (maps with sorted keys, as the
// runtime's normalizeTags sorts them; <, > and & left as they are).
func stringify(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// hashString is the runtime's hashString: FNV-1a 64 over UTF-16 code units, 16 hex digits.
func hashString(s string) string {
	h := uint64(0xcbf29ce484222325)
	for _, u := range utf16.Encode([]rune(s)) {
		h ^= uint64(u)
		h *= 0x100000001b3
	}
	return fmt.Sprintf("%016x", h)
}
