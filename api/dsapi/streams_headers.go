package dsapi

import (
	"encoding/base64"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/entityd/entityd/streamdb"
)

// Durable Streams protocol headers.
const (
	hStreamNextOffset    = "Stream-Next-Offset"
	hStreamUpToDate      = "Stream-Up-To-Date"
	hStreamCursor        = "Stream-Cursor"
	hStreamClosed        = "Stream-Closed"
	hStreamSeq           = "Stream-Seq"
	hStreamTTL           = "Stream-TTL"
	hStreamExpiresAt     = "Stream-Expires-At"
	hStreamForkedFrom    = "Stream-Forked-From"
	hStreamForkOffset    = "Stream-Fork-Offset"
	hStreamForkSubOffset = "Stream-Fork-Sub-Offset"
	hProducerID          = "Producer-Id"
	hProducerEpoch       = "Producer-Epoch"
	hProducerSeq         = "Producer-Seq"
	hProducerExpectedSeq = "Producer-Expected-Seq"
	hProducerReceivedSeq = "Producer-Received-Seq"
	hSSEDataEncoding     = "Stream-SSE-Data-Encoding"
)

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER, the bound on producer numbers.
const maxSafeInteger = 1<<53 - 1

// parseDecimal accepts a plain non-negative decimal integer without sign, leading zeros,
// fraction or exponent ("0", "3600"; not "03600", "+1", "1.5", "1e3").
func parseDecimal(s string, max int64) (int64, bool) {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > max {
		return 0, false
	}
	return n, true
}

// headerTrue reads a boolean protocol header: only "true" (any case) counts.
func headerTrue(h http.Header, name string) bool {
	return strings.EqualFold(strings.TrimSpace(h.Get(name)), "true")
}

// cursorEpoch and cursorInterval define Stream-Cursor values: the number of 20-second
// intervals since 2024-10-09, which lets CDNs collapse long-polls that share a cursor.
var cursorEpoch = time.Date(2024, 10, 9, 0, 0, 0, 0, time.UTC)

const cursorInterval = 20 * time.Second

// nextCursor returns the cursor for a live response. A client echoing a cursor at or past
// the current interval gets a strictly larger one, so its next request has a new cache key.
func nextCursor(clientCursor string) string {
	cur := int64(time.Since(cursorEpoch) / cursorInterval)
	if c, err := strconv.ParseInt(clientCursor, 10, 64); err == nil && c >= cur {
		cur = c + 1 + rand.Int64N(3)
	}
	return strconv.FormatInt(cur, 10)
}

// etag identifies the bytes of a catch-up response: the stream, the range, and whether
// the range ends the (closed) stream, so closing a stream changes the ETag of its tail.
func etag(path string, from, next streamdb.Offset, closedAtEnd bool) string {
	tag := `"` + base64.RawURLEncoding.EncodeToString([]byte(path)) + ":" + from.String() + ":" + next.String()
	if closedAtEnd {
		tag += ":c"
	}
	return tag + `"`
}

func setOffsetHeaders(h http.Header, next streamdb.Offset, upToDate, closed bool) {
	h.Set(hStreamNextOffset, next.String())
	if upToDate {
		h.Set(hStreamUpToDate, "true")
	}
	if closed {
		h.Set(hStreamClosed, "true")
	}
}
