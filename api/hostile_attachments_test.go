package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
)

// TestHostileAttachmentAndCollectionInput: hostile or careless uploads and collection
// writes are refused with a 4xx and the documented code, write nothing (streams,
// messages, attachment rows) and leave the server serving.
func TestHostileAttachmentAndCollectionInput(t *testing.T) {
	const limit = 64 << 10
	h := setup(t, testserver.Options{QuietLogs: true, API: api.Config{MaxBodyBytes: 64 << 10, MaxAttachmentBytes: limit}})
	h.registerType(collectionsType)
	h.mustSpawn("chat", "c1", `{}`)
	const att = entitiesPath + "/chat/c1/attachments"
	const coll = entitiesPath + "/chat/c1/collections/"
	subject := field("subject", `{"type":"inbox","key":"m1"}`)
	file := filePart("a.txt", "text/plain", []byte("hello"))
	form := func(parts ...formPart) (body []byte, headers []string) {
		b, ct := multipartBody(t, parts...)
		return b, []string{"Content-Type", ct}
	}
	upload := func(name string, status int, code string, parts ...formPart) hostileCase {
		b, hd := form(parts...)
		return hostileCase{name: name, method: "POST", path: att, body: b, headers: hd, status: status, code: code}
	}
	tooLarge := http.StatusRequestEntityTooLarge
	over, overHeaders := form(filePart("big", "", make([]byte, limit+1)), subject)
	manyParts := []formPart{file, subject}
	for i := range 15 {
		manyParts = append(manyParts, field(fmt.Sprint("x", i), "v"))
	}
	cases := []hostileCase{
		{name: "upload: JSON, not multipart", method: "POST", path: att, body: `{"file":"aGVsbG8="}`, status: bad, code: invalid},
		{name: "upload: multipart without a boundary", method: "POST", path: att, body: "--x\r\n", headers: []string{"Content-Type", "multipart/form-data"}, status: bad, code: invalid},
		{name: "upload: bad multipart", method: "POST", path: att, body: "this is not multipart at all", headers: []string{"Content-Type", "multipart/form-data; boundary=zzz"}, status: bad, code: invalid},
		{name: "upload: truncated multipart", method: "POST", path: att, body: "--zzz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nhel",
			headers: []string{"Content-Type", "multipart/form-data; boundary=zzz"}, status: bad, code: invalid},
		{name: "upload: empty body", method: "POST", path: att, body: "", headers: []string{"Content-Type", "multipart/form-data; boundary=zzz"}, status: bad, code: invalid},
		upload("upload: missing file part", bad, invalid, subject, field("role", "input")),
		upload("upload: file as a text field", bad, invalid, field("file", "hello"), subject),
		upload("upload: two files", bad, invalid, file, filePart("b.txt", "", []byte("b")), subject),
		upload("upload: bad role", bad, invalid, file, subject, field("role", "admin")),
		upload("upload: no subject", bad, invalid, file),
		upload("upload: subject not JSON", bad, invalid, file, field("subject", `{"type":`)),
		upload("upload: subject an array", bad, invalid, file, field("subject", `[1]`)),
		upload("upload: subject type unknown", bad, invalid, file, field("subject", `{"type":"secrets","key":"k"}`)),
		upload("upload: subject key not a string", bad, invalid, file, field("subject", `{"type":"inbox","key":5}`)),
		upload("upload: subject key empty", bad, invalid, file, field("subject", `{"type":"inbox","key":""}`)),
		upload("upload: subject key too long", bad, invalid, file, field("subject", `{"type":"inbox","key":"`+strings.Repeat("k", 1025)+`"}`)),
		upload("upload: subjectType without subjectKey", bad, invalid, file, field("subjectType", "inbox")),
		upload("upload: huge filename", bad, invalid, file, subject, field("filename", strings.Repeat("f", 5000))),
		upload("upload: filename with CRLF (header injection)", bad, invalid, file, subject, field("filename", "a.txt\r\nSet-Cookie: x=1")),
		upload("upload: filename with a NUL", bad, invalid, file, subject, field("filename", "a\x00.txt")),
		upload("upload: filename not UTF-8", bad, invalid, file, subject, field("filename", "a\xff.txt")),
		upload("upload: mimeType with CRLF", bad, invalid, file, subject, field("mimeType", "text/html\r\nX-Evil: 1")),
		upload("upload: mimeType not a media type", bad, invalid, file, subject, field("mimeType", "not a type")),
		upload("upload: mimeType too long", bad, invalid, file, subject, field("mimeType", "text/"+strings.Repeat("x", 300))),
		upload("upload: meta an array", bad, invalid, file, subject, field("meta", `[1,2]`)),
		upload("upload: meta not JSON", bad, invalid, file, subject, field("meta", `{"a":`)),
		upload("upload: meta too large", bad, invalid, file, subject, field("meta", `{"a":"`+strings.Repeat("x", 17<<10)+`"}`)),
		upload("upload: id with a slash", bad, invalid, file, subject, field("id", "a/b")),
		upload("upload: id dot-dot", bad, invalid, file, subject, field("id", "..")),
		upload("upload: id starting with a dot", bad, invalid, file, subject, field("id", ".hidden")),
		upload("upload: id percent-encoded", bad, invalid, file, subject, field("id", "a%2Fb")),
		upload("upload: id too long", bad, invalid, file, subject, field("id", strings.Repeat("i", 129))),
		upload("upload: too many parts", bad, invalid, manyParts...),
		{name: "upload: one byte over the limit", method: "POST", path: att, body: over, headers: overHeaders, status: tooLarge, code: "PAYLOAD_TOO_LARGE"},
		{name: "upload: over the limit, chunked", method: "POST", path: att, body: over, headers: overHeaders, chunked: true, status: tooLarge, code: "PAYLOAD_TOO_LARGE"},
		{name: "upload: Content-Length far over", method: "POST", path: att, body: make([]byte, 4<<20), headers: overHeaders, status: tooLarge, code: "PAYLOAD_TOO_LARGE"},
		{name: "download: unknown id", method: "GET", path: att + "/nope", status: nf, code: "NOT_FOUND"},
		{name: "download: id too long", method: "GET", path: att + "/" + strings.Repeat("i", 3000), status: nf, code: "NOT_FOUND"},
		{name: "download: encoded slash", method: "GET", path: att + "/a%2Fb", status: nf, code: "NOT_FOUND"},
		{name: "delete: unknown id", method: "DELETE", path: att + "/nope", status: nf, code: "NOT_FOUND"},
		{name: "stream: append to an attachment path", method: "POST", path: "/chat/c1/attachments/x", body: "x", status: nf},
		{name: "stream: create at an attachment path", method: "PUT", path: "/chat/c1/attachments/x", status: http.StatusMethodNotAllowed, code: "METHOD_NOT_ALLOWED"},
		{name: "collection: malformed JSON", method: "POST", path: coll + "comments", body: `{"operation":`, status: bad, code: invalid},
		{name: "collection: array body", method: "POST", path: coll + "comments", body: `[]`, status: bad, code: invalid},
		{name: "collection: extra property", method: "POST", path: coll + "comments", body: `{"operation":"insert","value":{"body":"b","timestamp":"t"},"principal":"user:x"}`, status: bad, code: invalid},
		{name: "collection: unknown operation", method: "POST", path: coll + "comments", body: `{"operation":"upsert","value":{}}`, status: bad, code: invalid},
		{name: "collection: operation not a string", method: "POST", path: coll + "comments", body: `{"operation":1,"value":{}}`, status: bad, code: invalid},
		{name: "collection: key too long", method: "POST", path: coll + "comments", body: `{"operation":"insert","key":"` + strings.Repeat("k", 257) + `","value":{"body":"b","timestamp":"t"}}`, status: bad, code: invalid},
		{name: "collection: key with a control character", method: "POST", path: coll + "comments", body: `{"operation":"insert","key":"a\u0001","value":{"body":"b","timestamp":"t"}}`, status: bad, code: invalid},
		{name: "collection: value an array", method: "POST", path: coll + "comments", body: `{"operation":"insert","value":[1]}`, status: bad, code: invalid},
		{name: "collection: value against the schema", method: "POST", path: coll + "comments", body: `{"operation":"insert","value":{"body":["b"],"timestamp":"t"}}`, status: unp, code: schemaFail},
		{name: "collection: body too large", method: "POST", path: coll + "comments", body: `{"operation":"insert","value":{"body":"` + strings.Repeat("x", 70<<10) + `","timestamp":"t"}}`, status: tooLarge, code: "PAYLOAD_TOO_LARGE"},
		{name: "collection: not writable", method: "POST", path: coll + "texts", body: `{"operation":"insert","value":{}}`, status: http.StatusForbidden, code: "UNAUTHORIZED"},
		{name: "collection: name too long", method: "POST", path: coll + strings.Repeat("c", 3000), body: `{"operation":"insert","value":{}}`, status: http.StatusForbidden, code: "UNAUTHORIZED"},
		{name: "type: writable collections not an object", method: "POST", path: typesPath, body: `{"name":"w","description":"d","externally_writable_collections":[1]}`, status: bad, code: invalid},
		{name: "type: writable collection without a type", method: "POST", path: typesPath, body: `{"name":"w","description":"d","externally_writable_collections":{"c":{}}}`, status: bad, code: invalid},
		{name: "type: writable collection name too long", method: "POST", path: typesPath, body: `{"name":"w","description":"d","externally_writable_collections":{"` + strings.Repeat("c", 300) + `":{"type":"t"}}}`, status: bad, code: invalid},
		{name: "type: writable collection name with a control character", method: "POST", path: typesPath, body: `{"name":"w","description":"d","externally_writable_collections":{"c\u0001":{"type":"t"}}}`, status: bad, code: invalid},
		{name: "type: comments without its contract", method: "POST", path: typesPath, body: `{"name":"w","description":"d","externally_writable_collections":{"comments":{"type":"t"}}}`, status: bad, code: invalid},
		{name: "type: writable collection operation unknown", method: "POST", path: typesPath, body: `{"name":"w","description":"d","externally_writable_collections":{"c":{"type":"t","operations":["drop"]}}}`, status: bad, code: invalid},
		{name: "collection: operation not allowed", method: "POST", path: coll + "comments", body: `{"operation":"delete","key":"k"}`, status: http.StatusForbidden, code: "UNAUTHORIZED"},
	}
	rows := func() string {
		var n string
		require.NoError(t, h.srv.Pool.QueryRow(context.Background(), `SELECT count(*)::text FROM attachments`).Scan(&n))
		return n
	}
	h.runHostileCases(t, cases, rows, func(t *testing.T, _ *response) { // rows: no attachment is stored
		requireStatus(t, h.do(http.MethodGet, "/_electric/health", nil), http.StatusOK)
	})
	// still serving the ordinary things
	requireStatus(t, h.upload("/chat/c1", []byte("after the storm")), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPost, coll+"comments", `{"operation":"insert","value":{"body":"b","timestamp":"t"}}`), http.StatusCreated)
}
