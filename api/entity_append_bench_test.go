package api_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/entityd/entityd/internal/testserver"
)

// BenchmarkEntityStreamAppend measures a handler's direct write to its entity's main
// stream over HTTP with the entity's write token (one State Protocol event per POST, 16
// writers on 16 entities; withpg runs Postgres with fsync off unless --fsync): the path
// the state_schemas check sits on. "plain" is a type without state_schemas (the check
// must cost nothing there); "schemas" a type whose state_schemas declare the event.
func BenchmarkEntityStreamAppend(b *testing.B) {
	for _, tc := range []struct{ name, typeBody string }{
		{"plain", `{"name":"bench","description":"d"}`},
		{"schemas", `{"name":"bench","description":"d","state_schemas":{"note":{"type":"object",
			"properties":{"text":{"type":"string"},"n":{"type":"integer"}},"required":["text","n"]}}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := testserver.Start(b, testserver.Options{QuietLogs: true})
			post := func(method, path, token string, body []byte) (int, http.Header) {
				req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				return res.StatusCode, res.Header
			}
			if st, _ := post("POST", "/_electric/entity-types", "", []byte(tc.typeBody)); st != http.StatusCreated {
				b.Fatalf("register: %d", st)
			}
			const writers = 16
			tokens := make([]string, writers)
			for i := range tokens {
				st, h := post("PUT", "/_electric/entities/bench/e"+strconv.Itoa(i), "", []byte(`{}`))
				if st != http.StatusCreated {
					b.Fatalf("spawn: %d", st)
				}
				tokens[i] = h.Get("X-Write-Token")
			}
			var next, seq atomic.Int64
			b.SetParallelism(8) // 8 × GOMAXPROCS (2 here) = 16 goroutines, one per writer
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := int(next.Add(1)-1) % writers
				path := "/bench/e" + strconv.Itoa(w) + "/main"
				for pb.Next() {
					n := seq.Add(1)
					ev := fmt.Appendf(nil, `{"type":"note","key":"k%d","value":{"text":"hello","n":%d},"headers":{"operation":"insert"}}`, n, n)
					if st, _ := post("POST", path, tokens[w], ev); st != http.StatusNoContent {
						b.Errorf("append: %d", st)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}
