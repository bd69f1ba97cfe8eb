package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/livefeed"
)

// TestHostileFeedInput: hostile or careless read requests to a live feed session
// (livefeed) are refused with a 4xx, start no read and write nothing.
func TestHostileFeedInput(t *testing.T) {
	h, _ := hostileSetup(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.srv.URL+livefeed.Prefix, nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	require.Equal(t, http.StatusOK, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	var session string
	for session == "" && sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var open struct{ Session string }
			require.NoError(t, json.Unmarshal([]byte(data), &open))
			session = open.Session
		}
	}
	require.Len(t, session, 32)
	reqs := livefeed.Prefix + "/" + session + "/requests"
	read := func(fields string) string { return `{"id":"r1",` + fields + `}` }
	cases := []hostileCase{
		{name: "not JSON", method: "POST", path: reqs, body: `{"id":`, status: bad, code: invalid},
		{name: "not an object", method: "POST", path: reqs, body: `["/notebook/n1/main"]`, status: bad, code: invalid},
		{name: "body too large", method: "POST", path: reqs, body: read(`"path":"/` + strings.Repeat("a", livefeed.MaxRequestBytes) + `"`), status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE"},
		{name: "a method other than GET", method: "POST", path: reqs, body: read(`"path":"/notebook/n1/main","method":"DELETE"`), status: bad, code: invalid},
		{name: "a body for the read", method: "POST", path: reqs, body: read(`"path":"/notebook/n1/main","body":"x"`), status: bad, code: invalid},
		{name: "no id", method: "POST", path: reqs, body: `{"path":"/notebook/n1/main"}`, status: bad, code: invalid},
		{name: "id too long", method: "POST", path: reqs, body: `{"id":"` + strings.Repeat("i", 65) + `","path":"/notebook/n1/main"}`, status: bad, code: invalid},
		{name: "absolute URL", method: "POST", path: reqs, body: read(`"path":"http://169.254.169.254/latest"`), status: bad, code: invalid},
		{name: "scheme-relative URL", method: "POST", path: reqs, body: read(`"path":"//evil.example/x"`), status: bad, code: invalid},
		{name: "relative path", method: "POST", path: reqs, body: read(`"path":"notebook/n1/main"`), status: bad, code: invalid},
		{name: "the feed itself", method: "POST", path: reqs, body: read(`"path":"/_electric/feed"`), status: bad, code: invalid},
		{name: "the feed's requests, other case", method: "POST", path: reqs, body: read(`"path":"/_Electric/Feed/` + session + `/requests"`), status: bad, code: invalid},
		{name: "a dot-dot segment", method: "POST", path: reqs, body: read(`"path":"/x/../_electric/feed"`), status: bad, code: invalid},
		{name: "a NUL in the path", method: "POST", path: reqs, body: read(`"path":"/notebook/n1/main\u0000"`), status: bad, code: invalid},
		{name: "Authorization in the body", method: "POST", path: reqs, body: read(`"path":"/notebook/n1/main","headers":{"Authorization":"Bearer x"}`), status: bad, code: invalid},
		{name: "Electric-Principal in the body", method: "POST", path: reqs, body: read(`"path":"/notebook/n1/main","headers":{"Electric-Principal":"system:root"}`), status: bad, code: invalid},
		{name: "a header split by CRLF", method: "POST", path: reqs, body: read(`"path":"/notebook/n1/main","headers":{"Accept":"a\r\nX-Evil: 1"}`), status: bad, code: invalid},
		{name: "unknown session", method: "POST", path: livefeed.Prefix + "/" + strings.Repeat("0", 32) + "/requests", body: read(`"path":"/notebook/n1/main"`), status: nf, code: "NOT_FOUND"},
		{name: "cancel in an unknown session", method: "DELETE", path: livefeed.Prefix + "/" + strings.Repeat("0", 32) + "/requests/r1", status: nf, code: "NOT_FOUND"},
		{name: "a GET of the requests", method: "GET", path: reqs, status: http.StatusMethodNotAllowed, code: "METHOD_NOT_ALLOWED"},
	}
	h.runHostileCases(t, cases, func() string { return strconv.Itoa(h.srv.Feed.Reads()) }, nil)
}
