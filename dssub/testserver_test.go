package dssub_test

import (
	"testing"

	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/internal/testserver"
)

func init() {
	dssub.StartTestServer = func(t *testing.T, dbURL string, opts dssub.Options) dssub.TestServer {
		t.Helper()
		s := testserver.Start(t, testserver.Options{DBURL: dbURL, Subs: opts})
		return dssub.TestServer{URL: s.URL, DBURL: s.DBURL, Pool: s.Pool, Store: s.Streams, Subs: s.Subs}
	}
}
