package attachment

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"mime"
	"testing"
	"unicode/utf8"
)

// FuzzParseForm: whatever a client sends as an upload's body, ParseForm returns a form
// that keeps every bound (the file at most the limit, its digest its own, each field
// checked) or an error a client is answered with (a FormError or ErrTooLarge), and
// never panics.
func FuzzParseForm(f *testing.F) {
	const boundary = "b0undary"
	part := func(headers, body string) string {
		return "--" + boundary + "\r\n" + headers + "\r\n\r\n" + body + "\r\n"
	}
	end := "--" + boundary + "--\r\n"
	f.Add([]byte(part(`Content-Disposition: form-data; name="file"; filename="a.txt"`+"\r\nContent-Type: text/plain", "hello") +
		part(`Content-Disposition: form-data; name="subject"`, `{"type":"inbox","key":"m1"}`) +
		part(`Content-Disposition: form-data; name="role"`, "output") +
		part(`Content-Disposition: form-data; name="meta"`, `{"w":1}`) + end))
	f.Add([]byte(part(`Content-Disposition: form-data; name="file"; filename="x"`, "0123456789abcdefg") +
		part(`Content-Disposition: form-data; name="subjectType"`, "run") +
		part(`Content-Disposition: form-data; name="subjectKey"`, "r1") +
		part(`Content-Disposition: form-data; name="id"`, "att-1") +
		part(`Content-Disposition: form-data; name="mimeType"`, "image/png; q=1") + end))
	f.Add([]byte(part(`Content-Disposition: form-data; name="file"; filename*=UTF-8''r%C3%A9.txt`, "") + end))
	f.Add([]byte("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\ntrunc"))
	f.Fuzz(func(t *testing.T, body []byte) {
		const max = 16
		form, err := ParseForm(bytes.NewReader(body), "multipart/form-data; boundary="+boundary, max)
		if err != nil {
			var bad *FormError
			if !errors.Is(err, ErrTooLarge) && !errors.As(err, &bad) {
				t.Fatalf("an error no client is answered with: %v", err)
			}
			return
		}
		var all []byte
		for _, c := range form.Chunks {
			all = append(all, c...)
		}
		if int64(len(all)) != form.Size || form.Size > max {
			t.Fatalf("size %d, chunks %d, limit %d", form.Size, len(all), max)
		}
		sum := sha256.Sum256(all)
		if hex.EncodeToString(sum[:]) != form.SHA256 {
			t.Fatal("the digest is not the file's")
		}
		if form.Role != "input" && form.Role != "output" {
			t.Fatalf("role %q", form.Role)
		}
		if !subjectTypes[form.Subject.Type] || form.Subject.Key == "" || len(form.Subject.Key) > MaxSubjectKeyBytes {
			t.Fatalf("subject %+v", form.Subject)
		}
		if form.ID != "" && !ValidID(form.ID) {
			t.Fatalf("id %q", form.ID)
		}
		if len(form.Filename) > MaxFilenameBytes || !utf8.ValidString(form.Filename) || !printable(form.Filename) {
			t.Fatalf("filename %q", form.Filename)
		}
		if _, _, err := mime.ParseMediaType(form.MimeType); err != nil || !printable(form.MimeType) {
			t.Fatalf("mime type %q", form.MimeType)
		}
		if form.Meta != nil {
			var m map[string]any
			if json.Unmarshal(form.Meta, &m) != nil {
				t.Fatalf("meta %s", form.Meta)
			}
		}
	})
}

// TestStreamPaths: the shape of attachment stream paths and ids.
func TestStreamPaths(t *testing.T) {
	for path, want := range map[string]bool{
		"/chat/c1/attachments/a1": true, "/chat/c1/attachments/": false, "/chat/c1/attachments": false,
		"/chat/c1/attachments/a/b": false, "//c1/attachments/a": false, "/chat/c1/main": false, "chat/c1/attachments/a": false,
	} {
		if IsStreamPath(path) != want {
			t.Errorf("IsStreamPath(%q) = %v", path, !want)
		}
	}
	if StreamPath("/chat/c1", "a1") != "/chat/c1/attachments/a1" || !IsStreamPath(StreamPath("/chat/c1", "a1")) {
		t.Error("StreamPath")
	}
	for id, want := range map[string]bool{"a1": true, "3f2b-uuid": true, "a.b_c:d-e": true, "": false, ".x": false,
		"a/b": false, "a%2F": false, "a b": false, "é": false} {
		if ValidID(id) != want {
			t.Errorf("ValidID(%q) = %v", id, !want)
		}
	}
}
