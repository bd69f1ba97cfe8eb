package api_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/internal/testserver"
)

// formPart is one part of a multipart upload: a file when filename is set.
type formPart struct {
	name, filename, contentType string
	data                        []byte
}

func field(name, value string) formPart { return formPart{name: name, data: []byte(value)} }

func filePart(filename, contentType string, data []byte) formPart {
	return formPart{name: "file", filename: filename, contentType: contentType, data: data}
}

// multipartBody encodes parts as multipart/form-data and returns the body and its
// Content-Type.
func multipartBody(t testing.TB, parts ...formPart) ([]byte, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf(`form-data; name=%q`, p.name)
		if p.filename != "" {
			cd += fmt.Sprintf(`; filename=%q`, p.filename)
		}
		h.Set("Content-Disposition", cd)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		pw, err := w.CreatePart(h)
		require.NoError(t, err)
		_, err = pw.Write(p.data)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return buf.Bytes(), w.FormDataContentType()
}

// upload posts an attachment of data to the entity at url, as the runtime does.
func (h *harness) upload(url string, data []byte, extra ...formPart) *response {
	h.t.Helper()
	parts := append([]formPart{filePart("notes.bin", "application/octet-stream", data),
		field("subject", `{"type":"inbox","key":"m1"}`), field("role", "input")}, extra...)
	body, ct := multipartBody(h.t, parts...)
	return h.do(http.MethodPost, entitiesPath+url+"/attachments", body, "Content-Type", ct)
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// rawEvents reads the entity's main stream as raw JSON events (collection events carry
// an object in their headers, which the harness's event type does not).
func (h *harness) rawEvents(url string) []map[string]json.RawMessage {
	h.t.Helper()
	r := h.do(http.MethodGet, url+"/main?offset=-1", nil)
	requireStatus(h.t, r, http.StatusOK)
	var out []map[string]json.RawMessage
	require.NoError(h.t, json.Unmarshal(r.Body, &out))
	return out
}

func eventWithKey(t *testing.T, events []map[string]json.RawMessage, typ, key string) []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	for _, e := range events {
		if str(t, e["type"]) == typ && str(t, e["key"]) == key {
			out = append(out, e)
		}
	}
	return out
}

// attachmentLimit is the limit the attachment tests run with: past one append's chunks
// (4 MiB), with a partial last chunk.
const attachmentLimit = 5<<20 + 3

// TestAttachmentAtTheLimitRoundTrips: a file of exactly the limit is stored; it reads
// back byte for byte with its type, length, digest and immutable cache headers, over the
// entity API and over Durable Streams; the entity's main stream has its manifest entry;
// deleting it removes all three.
func TestAttachmentAtTheLimitRoundTrips(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true, API: api.Config{MaxAttachmentBytes: attachmentLimit}})
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "c1", `{}`)
	data := randomBytes(t, attachmentLimit)
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])

	res := h.upload("/chat/c1", data, field("id", "att-1"), field("mimeType", "image/png"),
		field("filename", `ré"sumé;x.png`), field("meta", `{"width": 3}`))
	requireStatus(t, res, http.StatusCreated)
	var created struct {
		Txid       string                     `json:"txid"`
		Attachment map[string]json.RawMessage `json:"attachment"`
	}
	res.decode(t, &created)
	require.Regexp(t, uuidRe, created.Txid)
	a := created.Attachment
	require.Equal(t, "attachment:att-1", str(t, a["key"]))
	require.Equal(t, "attachment", str(t, a["kind"]))
	require.Equal(t, "att-1", str(t, a["id"]))
	require.Equal(t, "/chat/c1/attachments/att-1", str(t, a["streamPath"]))
	require.Equal(t, "complete", str(t, a["status"]))
	require.JSONEq(t, `{"type":"inbox","key":"m1"}`, string(a["subject"]))
	require.Equal(t, "input", str(t, a["role"]))
	require.Equal(t, "image/png", str(t, a["mimeType"]))
	require.Equal(t, `ré"sumé;x.png`, str(t, a["filename"]))
	require.Equal(t, int64(attachmentLimit), integer(t, a["byteLength"]))
	require.Equal(t, digest, str(t, a["sha256"]))
	requireISOTime(t, a["createdAt"])
	require.Equal(t, devPrincipal, str(t, a["createdBy"]))
	require.JSONEq(t, `{"width":3}`, string(a["meta"]))

	// the entity API
	got := h.do(http.MethodGet, entitiesPath+"/chat/c1/attachments/att-1", nil)
	requireStatus(t, got, http.StatusOK)
	require.True(t, bytes.Equal(data, got.Body), "the bytes read back (%d of %d)", len(got.Body), len(data))
	require.Equal(t, "image/png", got.Header.Get("Content-Type"))
	require.Equal(t, fmt.Sprint(attachmentLimit), got.Header.Get("Content-Length"))
	require.Equal(t, "private, max-age=31536000, immutable", got.Header.Get("Cache-Control"))
	require.Equal(t, "nosniff", got.Header.Get("X-Content-Type-Options"))
	require.Equal(t, `"sha256-`+digest+`"`, got.Header.Get("ETag"))
	require.Equal(t, `attachment; filename="r__sum_;x.png"; filename*=UTF-8''r%C3%A9%22sum%C3%A9%3Bx.png`,
		got.Header.Get("Content-Disposition"))
	notModified := h.do(http.MethodGet, entitiesPath+"/chat/c1/attachments/att-1", nil, "If-None-Match", got.Header.Get("ETag"))
	requireStatus(t, notModified, http.StatusNotModified)
	require.Empty(t, notModified.Body)

	// Durable Streams: the same bytes, closed
	ds := h.do(http.MethodGet, "/chat/c1/attachments/att-1?offset=-1", nil)
	requireStatus(t, ds, http.StatusOK)
	for ds.Header.Get("Stream-Up-To-Date") != "true" {
		next := h.do(http.MethodGet, "/chat/c1/attachments/att-1?offset="+ds.Header.Get("Stream-Next-Offset"), nil)
		requireStatus(t, next, http.StatusOK)
		ds.Body = append(ds.Body, next.Body...)
		ds.Header = next.Header
	}
	require.True(t, bytes.Equal(data, ds.Body), "the stream's bytes (%d of %d)", len(ds.Body), len(data))
	require.Equal(t, "true", ds.Header.Get("Stream-Closed"))

	// the manifest entry the runtime and UI read
	events := h.rawEvents("/chat/c1")
	manifest := eventWithKey(t, events, "manifest", "attachment:att-1")
	require.Len(t, manifest, 1)
	require.JSONEq(t, string(res.Body), `{"txid":`+string(mustJSON(t, created.Txid))+`,"attachment":`+string(manifest[0]["value"])+`}`)
	var headers map[string]string
	require.NoError(t, json.Unmarshal(manifest[0]["headers"], &headers))
	require.Equal(t, "upsert", headers["operation"])
	require.Equal(t, created.Txid, headers["txid"])

	// an id is used once
	dup := h.upload("/chat/c1", []byte("x"), field("id", "att-1"))
	requireError(t, dup, http.StatusConflict, "INVALID_REQUEST", `Attachment already exists at id "att-1"`)

	// delete
	del := h.do(http.MethodDelete, entitiesPath+"/chat/c1/attachments/att-1", nil)
	requireStatus(t, del, http.StatusOK)
	var deleted struct{ Txid string }
	del.decode(t, &deleted)
	require.Regexp(t, uuidRe, deleted.Txid)
	requireError(t, h.do(http.MethodGet, entitiesPath+"/chat/c1/attachments/att-1", nil), http.StatusNotFound, "NOT_FOUND", "Attachment not found")
	requireStatus(t, h.do(http.MethodGet, "/chat/c1/attachments/att-1?offset=-1", nil), http.StatusNotFound)
	requireError(t, h.do(http.MethodDelete, entitiesPath+"/chat/c1/attachments/att-1", nil), http.StatusNotFound, "NOT_FOUND", "Attachment not found")
	manifest = eventWithKey(t, h.rawEvents("/chat/c1"), "manifest", "attachment:att-1")
	require.Len(t, manifest, 2)
	require.NoError(t, json.Unmarshal(manifest[1]["headers"], &headers))
	require.Equal(t, "delete", headers["operation"])
	require.Equal(t, deleted.Txid, headers["txid"])
	require.Nil(t, manifest[1]["value"])
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestAttachmentOverTheLimit: one byte past the limit is refused with 413, whether the
// body's length is announced (refused before it is read) or not (refused at the first
// byte past the limit), and nothing is stored.
func TestAttachmentOverTheLimit(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true, API: api.Config{MaxAttachmentBytes: attachmentLimit}})
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "c1", `{}`)
	before := len(h.rawEvents("/chat/c1"))
	body, ct := multipartBody(t, filePart("big.bin", "", randomBytes(t, attachmentLimit+1)),
		field("subjectType", "inbox"), field("subjectKey", "m1"))
	requireError(t, h.do(http.MethodPost, entitiesPath+"/chat/c1/attachments", body, "Content-Type", ct),
		http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", fmt.Sprintf("Attachment exceeds maximum size of %d bytes", attachmentLimit))
	// no Content-Length: the server reads up to the limit and stops
	chunked := h.hostile(t, hostileCase{method: "POST", path: entitiesPath + "/chat/c1/attachments", body: body, chunked: true,
		headers: []string{"Content-Type", ct}})
	requireError(t, chunked, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", fmt.Sprintf("Attachment exceeds maximum size of %d bytes", attachmentLimit))
	// a Content-Length beyond the limit and the form's overhead: refused unread
	huge := h.hostile(t, hostileCase{method: "POST", path: entitiesPath + "/chat/c1/attachments", body: make([]byte, attachmentLimit+(1<<20)),
		headers: []string{"Content-Type", ct}})
	require.Equal(t, http.StatusRequestEntityTooLarge, huge.Status, string(huge.Body))
	require.Len(t, h.rawEvents("/chat/c1"), before, "nothing is written")
	var n int
	require.NoError(t, h.srv.Pool.QueryRow(t.Context(), `SELECT count(*) FROM attachments`).Scan(&n))
	require.Zero(t, n)
}

// TestAttachmentRefusals: an unknown attachment is 404; an entity that does not exist
// 404; one that was killed takes no attachment (409).
func TestAttachmentRefusals(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true})
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "c1", `{}`)
	requireError(t, h.do(http.MethodGet, entitiesPath+"/chat/c1/attachments/nope", nil), http.StatusNotFound, "NOT_FOUND", "Attachment not found")
	requireStatus(t, h.upload("/chat/none", []byte("x")), http.StatusNotFound)
	res := h.upload("/chat/c1", []byte("hello"))
	requireStatus(t, res, http.StatusCreated)
	var created struct{ Attachment struct{ ID string } }
	res.decode(t, &created)
	require.Regexp(t, uuidRe, created.Attachment.ID, "an id is made when none is given")
	got := h.do(http.MethodGet, entitiesPath+"/chat/c1/attachments/"+created.Attachment.ID, nil)
	requireStatus(t, got, http.StatusOK)
	require.Equal(t, "hello", string(got.Body))
	require.Equal(t, "application/octet-stream", got.Header.Get("Content-Type"))
	// nobody writes, closes, deletes or pre-empts an attachment's stream through the stream API
	path := "/chat/c1/attachments/" + created.Attachment.ID
	requireStatus(t, h.do(http.MethodPost, path, []byte("more"), "Content-Type", "application/octet-stream"), http.StatusMethodNotAllowed)
	requireStatus(t, h.do(http.MethodDelete, path, nil), http.StatusMethodNotAllowed)
	requireStatus(t, h.do(http.MethodPut, "/chat/c1/attachments/later", nil), http.StatusMethodNotAllowed)
	requireStatus(t, h.do(http.MethodPut, "/anything/x/attachments/y", nil), http.StatusMethodNotAllowed)

	requireStatus(t, h.do(http.MethodDelete, entitiesPath+"/chat/c1", nil), http.StatusOK)
	requireError(t, h.upload("/chat/c1", []byte("late")), http.StatusConflict, "NOT_RUNNING", "Entity is not accepting writes")
	requireError(t, h.do(http.MethodDelete, entitiesPath+"/chat/c1/attachments/"+created.Attachment.ID, nil),
		http.StatusConflict, "NOT_RUNNING", "Entity is not accepting writes")
	// what was stored stays readable
	requireStatus(t, h.do(http.MethodGet, entitiesPath+"/chat/c1/attachments/"+created.Attachment.ID, nil), http.StatusOK)
}

// TestAttachmentsOfAnotherPrincipal: bob may neither upload to, read from nor delete
// from alice's entity, over the entity API or over Durable Streams; rita, with a read
// grant, reads but does not write.
func TestAttachmentsOfAnotherPrincipal(t *testing.T) {
	s := startJWT(t)
	s.must(t, "user:alice", "POST", "/_electric/entity-types", `{"name":"doc","description":"d"}`, http.StatusCreated)
	s.must(t, "user:alice", "PUT", "/_electric/entities/doc/d1", `{}`, http.StatusCreated)
	s.must(t, "user:bob", "POST", "/_electric/entity-types", `{"name":"bobs","description":"d"}`, http.StatusCreated)
	s.must(t, "user:bob", "PUT", "/_electric/entities/bobs/b1", `{}`, http.StatusCreated)
	s.must(t, "user:alice", "POST", "/_electric/entities/doc/d1/grants",
		`{"subject_kind":"principal","subject_value":"user:rita","permission":"read"}`, http.StatusCreated)
	secret := []byte("alice's secret")
	body, ct := multipartBody(t, filePart("s.txt", "text/plain", secret), field("id", "s1"),
		field("subject", `{"type":"inbox","key":"m"}`))
	post := func(who, url string) (int, string) {
		req, _ := http.NewRequest("POST", s.URL+"/_electric/entities"+url+"/attachments", bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+s.token(t, who))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(out)
	}
	status, out := post("user:bob", "/doc/d1")
	require.Equal(t, http.StatusUnauthorized, status, out)
	status, out = post("user:rita", "/doc/d1")
	require.Equal(t, http.StatusUnauthorized, status, out)
	status, out = post("user:alice", "/doc/d1")
	require.Equal(t, http.StatusCreated, status, out)

	require.Equal(t, string(secret), s.must(t, "user:alice", "GET", "/_electric/entities/doc/d1/attachments/s1", "", http.StatusOK))
	require.Equal(t, string(secret), s.must(t, "user:rita", "GET", "/_electric/entities/doc/d1/attachments/s1", "", http.StatusOK))
	require.Equal(t, string(secret), s.must(t, "user:rita", "GET", "/doc/d1/attachments/s1?offset=-1", "", http.StatusOK))
	for _, path := range []string{"/doc/d1/attachments/s1?offset=-1", "/v1/stream/doc/d1/attachments/s1?offset=-1"} {
		out := s.must(t, "user:bob", "GET", path, "", http.StatusForbidden)
		require.NotContains(t, out, "secret")
		s.must(t, "", "GET", path, "", http.StatusUnauthorized)
	}
	out = s.must(t, "user:bob", "GET", "/_electric/entities/doc/d1/attachments/s1", "", http.StatusUnauthorized)
	require.NotContains(t, out, "secret")
	// an attachment path with no stream: 401 without credentials (as the reference), 404 with
	s.must(t, "", "POST", "/doc/d1/attachments/none", "x", http.StatusUnauthorized)
	s.must(t, "user:bob", "POST", "/doc/d1/attachments/none", "x", http.StatusNotFound)
	// bob's own entity does not reach alice's attachment
	s.must(t, "user:bob", "GET", "/_electric/entities/bobs/b1/attachments/s1", "", http.StatusNotFound)
	// nor does a fork of its stream
	req, _ := http.NewRequest("PUT", s.URL+"/bob/fork", nil)
	req.Header.Set("Stream-Forked-From", "/doc/d1/attachments/s1")
	req.Header.Set("Authorization", "Bearer "+s.token(t, "user:bob"))
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	s.must(t, "user:bob", "DELETE", "/_electric/entities/doc/d1/attachments/s1", "", http.StatusUnauthorized)
	s.must(t, "user:rita", "DELETE", "/_electric/entities/doc/d1/attachments/s1", "", http.StatusUnauthorized)
	require.Equal(t, string(secret), s.must(t, "user:alice", "GET", "/_electric/entities/doc/d1/attachments/s1", "", http.StatusOK))
}

// TestAttachmentQuotas: one principal's attachments are bounded in number and in bytes
// (429 QUOTA_EXCEEDED); another principal's are not affected.
func TestAttachmentQuotas(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true, API: api.Config{Quotas: quota.Limits{Attachments: 3, AttachmentBytes: 100}}})
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "c1", `{}`)
	for _, who := range []string{"user:alice", "user:bob"} {
		requireStatus(t, h.do(http.MethodPost, entitiesPath+"/chat/c1/grants",
			`{"subject_kind":"principal","subject_value":"`+who+`","permission":"write"}`), http.StatusCreated)
	}
	as := func(who string, n int) *response {
		body, ct := multipartBody(t, filePart("f", "", randomBytes(t, n)), field("subject", `{"type":"inbox","key":"m"}`))
		return h.do(http.MethodPost, entitiesPath+"/chat/c1/attachments", body, "Content-Type", ct, "Electric-Principal", who)
	}
	requireStatus(t, as("user:alice", 60), http.StatusCreated)
	tooMany := as("user:alice", 41)
	requireError(t, tooMany, http.StatusTooManyRequests, quota.CodeExceeded, "user:alice has 60 bytes of attachments, the most allowed (ENTITYD_QUOTA_ATTACHMENT_BYTES)")
	require.Equal(t, quota.RetryAfter, tooMany.Header.Get("Retry-After"))
	requireStatus(t, as("user:alice", 40), http.StatusCreated)
	requireStatus(t, as("user:alice", 0), http.StatusCreated)
	requireError(t, as("user:alice", 0), http.StatusTooManyRequests, quota.CodeExceeded, "user:alice has 3 attachments, the most allowed (ENTITYD_QUOTA_ATTACHMENTS)")
	requireStatus(t, as("user:bob", 100), http.StatusCreated)
	// deleting frees the quota
	var id string
	require.NoError(t, h.srv.Pool.QueryRow(t.Context(), `SELECT id FROM attachments WHERE created_by = 'user:alice' AND byte_length = 60`).Scan(&id))
	requireStatus(t, h.do(http.MethodDelete, entitiesPath+"/chat/c1/attachments/"+id, nil, "Electric-Principal", "user:alice"), http.StatusOK)
	requireStatus(t, as("user:alice", 60), http.StatusCreated)
}

// TestAttachmentBodyTimeout: an upload whose body stops arriving is cut at its deadline
// (the body timeout plus its length at the minimum rate) with 408 and nothing stored.
func TestAttachmentBodyTimeout(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true, API: api.Config{BodyReadTimeout: 300 * time.Millisecond, WriteMinRate: 1 << 40}})
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "c1", `{}`)
	body, ct := multipartBody(t, filePart("f.bin", "", randomBytes(t, 64<<10)), field("subject", `{"type":"inbox","key":"m"}`))
	pr, pw := io.Pipe()
	stalled := make(chan struct{})
	go func() {
		_, _ = pw.Write(body[:len(body)/2]) // half of it, then nothing
		<-stalled
		_ = pw.Close()
	}()
	defer close(stalled)
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+entitiesPath+"/chat/c1/attachments", pr)
	require.NoError(t, err)
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", ct)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, res.StatusCode, string(out))
	require.Contains(t, string(out), `"code":"REQUEST_TIMEOUT"`)
	var n int
	require.NoError(t, h.srv.Pool.QueryRow(t.Context(), `SELECT count(*) FROM attachments`).Scan(&n))
	require.Zero(t, n)
}
