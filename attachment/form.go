package attachment

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"
)

// Bounds of an upload's form besides its file (each refused with a 400 beyond).
const (
	// MaxParts is how many parts a form may have.
	MaxParts = 16
	// MaxFieldBytes bounds a text field (meta is the largest one wants).
	MaxFieldBytes = 16 << 10
	// MaxFilenameBytes bounds a file name.
	MaxFilenameBytes = 1024
	// MaxSubjectKeyBytes bounds the key of the subject.
	MaxSubjectKeyBytes = 1024
	// MaxMimeTypeBytes bounds a content type.
	MaxMimeTypeBytes = 255
	// FormOverhead is what a form may add to its file: the other parts, their headers
	// and the boundaries. A body longer than the file limit plus this is refused with
	// 413 before a byte of it is read.
	FormOverhead = MaxParts*(MaxFieldBytes+4<<10) + 64<<10
)

// ChunkBytes is the size of the messages an attachment's bytes are stored as: the
// stream store's read page, so a read returns one message at a time and no message is
// ever copied whole into a larger buffer.
const ChunkBytes = 1 << 20

// ErrTooLarge is a file beyond the limit (or a body beyond the limit plus FormOverhead):
// the caller answers 413. Nothing past the limit was read.
var ErrTooLarge = errors.New("attachment: too large")

// ErrTimeout is a body that did not arrive within its read deadline: the caller
// answers 408 and closes the connection.
var ErrTimeout = errors.New("attachment: the body did not arrive in time")

// FormError is a form the caller answers with 400 and its message.
type FormError struct{ Msg string }

func (e *FormError) Error() string { return e.Msg }

func invalid(format string, args ...any) error { return &FormError{Msg: fmt.Sprintf(format, args...)} }

// Subject is what an attachment is attached to: an inbox message, a run, a text, a tool
// call or a context entry, by key.
type Subject struct {
	Type string `json:"type"`
	Key  string `json:"key"`
}

var subjectTypes = map[string]bool{"inbox": true, "run": true, "text": true, "tool_call": true, "context": true}

// Form is an upload, parsed and checked.
type Form struct {
	ID       string // "" when the caller gave none
	Chunks   [][]byte
	Size     int64
	SHA256   string // hex
	MimeType string
	Filename string // "" when there is none
	Subject  Subject
	Role     string
	Meta     json.RawMessage // nil when there is none
}

// ParseForm reads an upload (multipart/form-data: file, subject or subjectType and
// subjectKey, role, filename, mimeType, meta, id) from body, keeping at most maxFile
// bytes of file: the file is read in ChunkBytes pieces as it arrives and hashed on the
// way, and reading stops with ErrTooLarge at the first byte past maxFile. The other
// parts are bounded (MaxParts, MaxFieldBytes); unknown parts are read and ignored, as
// the reference does. body should be bounded by the caller too (http.MaxBytesReader at
// maxFile+FormOverhead: its error reads as ErrTooLarge).
func ParseForm(body io.Reader, contentType string, maxFile int64) (*Form, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, invalid("Attachment uploads must use multipart/form-data")
	}
	mr := multipart.NewReader(body, params["boundary"])
	var (
		f        Form
		haveFile bool
		fileName string
		fileType string
		fields   = map[string]string{}
	)
	for parts := 0; ; parts++ {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, readError(err)
		}
		if parts == MaxParts {
			return nil, invalid("An upload has at most %d parts", MaxParts)
		}
		name := p.FormName()
		if name == "file" && p.FileName() != "" {
			if haveFile {
				return nil, invalid("An upload carries one file")
			}
			haveFile = true
			fileName, fileType = p.FileName(), p.Header.Get("Content-Type")
			if err := readFile(p, maxFile, &f); err != nil {
				return nil, err
			}
			continue
		}
		v, err := readField(p, name)
		if err != nil {
			return nil, err
		}
		if _, seen := fields[name]; !seen { // FormData.get: the first one
			fields[name] = v
		}
	}
	if !haveFile {
		return nil, invalid("Missing file field")
	}
	return &f, f.fill(fields, fileName, fileType)
}

// readFile reads the file part into chunks, hashing it.
func readFile(p *multipart.Part, maxFile int64, f *Form) error {
	h := sha256.New()
	for {
		buf := make([]byte, ChunkBytes)
		n, err := io.ReadFull(p, buf)
		if n > 0 {
			f.Size += int64(n)
			if f.Size > maxFile {
				return ErrTooLarge
			}
			h.Write(buf[:n])
			f.Chunks = append(f.Chunks, buf[:n:n])
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return readError(err)
		}
	}
	f.SHA256 = hex.EncodeToString(h.Sum(nil))
	return nil
}

// readField reads a text part of at most MaxFieldBytes.
func readField(p *multipart.Part, name string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(p, MaxFieldBytes+1))
	if err != nil {
		return "", readError(err)
	}
	if len(data) > MaxFieldBytes {
		return "", invalid("A form field is at most %d bytes (%.64q)", MaxFieldBytes, name)
	}
	return string(data), nil
}

// readError is ErrTooLarge for a body past its bound, ErrTimeout for one past its
// deadline, else a 400.
func readError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return ErrTooLarge
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return ErrTimeout
	}
	return invalid("Invalid multipart form data")
}

// field is a trimmed text field; "" is absent (the reference's formString).
func field(fields map[string]string, name string) string { return strings.TrimSpace(fields[name]) }

// fill checks the text fields and completes f from them and from the file part's own
// name and content type.
func (f *Form) fill(fields map[string]string, fileName, fileType string) error {
	f.ID = field(fields, "id")
	if f.ID != "" && !ValidID(f.ID) {
		return invalid("attachment id must be 1-%d letters, digits or ._:- and not start with \".\"", MaxIDBytes)
	}
	switch f.Role = field(fields, "role"); f.Role {
	case "":
		f.Role = "input"
	case "input", "output":
	default:
		return invalid("invalid attachment role")
	}
	f.Filename = field(fields, "filename")
	if f.Filename == "" {
		f.Filename = fileName
	}
	if len(f.Filename) > MaxFilenameBytes {
		return invalid("filename is at most %d bytes", MaxFilenameBytes)
	}
	if !printable(f.Filename) {
		return invalid("filename must be UTF-8 text without control characters")
	}
	f.MimeType = field(fields, "mimeType")
	if f.MimeType == "" {
		f.MimeType = strings.TrimSpace(fileType)
	}
	if f.MimeType == "" {
		f.MimeType = "application/octet-stream"
	}
	if len(f.MimeType) > MaxMimeTypeBytes || !printable(f.MimeType) {
		return invalid("mimeType must be a media type of at most %d bytes", MaxMimeTypeBytes)
	}
	if _, _, err := mime.ParseMediaType(f.MimeType); err != nil {
		return invalid("mimeType must be a media type such as image/png")
	}
	if raw := field(fields, "meta"); raw != "" {
		if !json.Valid([]byte(raw)) {
			return invalid("Invalid JSON field: meta")
		}
		if raw[0] != '{' {
			return invalid("attachment meta must be an object")
		}
		f.Meta = compactJSON(raw)
	}
	return f.fillSubject(fields)
}

// fillSubject reads the subject: a JSON object, else subjectType and subjectKey.
func (f *Form) fillSubject(fields map[string]string) error {
	if raw := field(fields, "subject"); raw != "" {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return invalid("Invalid JSON field: subject")
		}
		o, ok := v.(map[string]any)
		if !ok {
			return invalid("attachment subject must be an object")
		}
		typ, ok1 := o["type"].(string)
		key, ok2 := o["key"].(string)
		if !ok1 || !ok2 {
			return invalid("attachment subject requires type and key")
		}
		f.Subject = Subject{Type: typ, Key: key}
	} else {
		f.Subject = Subject{Type: field(fields, "subjectType"), Key: field(fields, "subjectKey")}
		if f.Subject.Type == "" || f.Subject.Key == "" {
			return invalid("attachment subject is required")
		}
	}
	if !subjectTypes[f.Subject.Type] {
		return invalid("invalid attachment subject type")
	}
	if f.Subject.Key == "" {
		return invalid("attachment subject key is required")
	}
	if len(f.Subject.Key) > MaxSubjectKeyBytes || !printable(f.Subject.Key) {
		return invalid("attachment subject key is text of at most %d bytes", MaxSubjectKeyBytes)
	}
	return nil
}

// printable reports UTF-8 text without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

func compactJSON(raw string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		return json.RawMessage(raw)
	}
	return b.Bytes()
}
