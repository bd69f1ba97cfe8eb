package entityapi

import (
	"strings"
)

// contentDisposition is the Content-Disposition of an attachment: always "attachment"
// (a browser that opens the URL downloads it rather than rendering the uploader's bytes
// as a page), with the name twice: an ASCII fallback in which anything outside printable
// ASCII, a quote or a backslash is "_", and the exact name in RFC 8187's filename*. The
// name came from a client: neither form can carry a CR, LF or quote into the header.
func contentDisposition(filename string) string {
	if filename == "" {
		return "attachment"
	}
	var fallback strings.Builder
	for _, r := range filename {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			fallback.WriteByte('_')
			continue
		}
		fallback.WriteRune(r)
	}
	return `attachment; filename="` + fallback.String() + `"; filename*=UTF-8''` + encodeRFC8187(filename)
}

// encodeRFC8187 percent-encodes every byte of s outside RFC 8187's attr-char.
func encodeRFC8187(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// etagMatches reports whether an If-None-Match header names etag ("*", or one of a
// comma-separated list, weak or strong).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
