package api_test

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// metricValue returns the value of the sample whose name and labels are exactly series
// (as printed, labels sorted), or -1.
func metricValue(t *testing.T, body []byte, series string) float64 {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			require.NoError(t, err, line)
			return v
		}
	}
	return -1
}

// TestMetricsEndpoint: GET /_electric/metrics serves the Prometheus text format with the
// request, group-commit, pool and Go runtime metrics, counting what this test did (other
// tests run in parallel in this process, so counts are lower bounds).
func TestMetricsEndpoint(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "m", nil)
	for range 3 {
		h.mustSend("/chat/m", `{"payload":"x"}`)
	}
	requireStatus(t, h.do(http.MethodGet, "/chat/m/main?offset=-1&live=long-poll", nil), http.StatusOK)

	r := h.do(http.MethodGet, "/_electric/metrics", nil)
	requireStatus(t, r, http.StatusOK)
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain"), r.Header.Get("Content-Type"))
	sends := metricValue(t, r.Body, `entityd_http_requests_total{code="200",live="",method="POST",route="/_electric/entities/{type}/{id}/send"}`)
	require.GreaterOrEqual(t, sends, 3.0)
	require.GreaterOrEqual(t, metricValue(t, r.Body,
		`entityd_http_requests_total{code="200",live="long-poll",method="GET",route="/*"}`), 1.0)
	require.GreaterOrEqual(t, metricValue(t, r.Body, `entityd_stream_appends_total`), 3.0)
	require.GreaterOrEqual(t, metricValue(t, r.Body, `entityd_stream_commit_duration_seconds_count`), 1.0)
	require.GreaterOrEqual(t, metricValue(t, r.Body, `entityd_db_pool_connections{state="max"}`), 1.0)
	require.GreaterOrEqual(t, metricValue(t, r.Body, `entityd_db_pool_acquires_total`), 1.0)
	require.GreaterOrEqual(t, metricValue(t, r.Body, `go_goroutines`), 1.0)

	// A client cannot invent label values: an unknown live mode counts as "", an unknown
	// method as OTHER.
	h.do(http.MethodGet, "/chat/m/main?offset=-1&live=bogus", nil)
	h.do("BREW", "/chat/m/main", nil)
	r = h.do(http.MethodGet, "/_electric/metrics", nil)
	require.NotContains(t, string(r.Body), `live="bogus"`)
	require.NotContains(t, string(r.Body), `method="BREW"`)
	require.Contains(t, string(r.Body), `method="OTHER"`)
}
