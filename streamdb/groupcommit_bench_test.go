package streamdb

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/entityd/entityd/internal/pgtest"
)

// BenchmarkGroupCommit measures appends through the lanes with 64 writers, one stream
// each (bench/ab_append.sh's shape without HTTP): what the commit path costs without
// the HTTP layer and the load tool.
//
//	go run ./internal/tools/withpg -- go test -run '^$' -bench GroupCommit -benchtime 20000x ./streamdb
func BenchmarkGroupCommit(b *testing.B) {
	for _, kind := range []string{"plain", "producer"} {
		b.Run(kind, func(b *testing.B) {
			benchGroupCommit(b, 64, kind == "producer")
		})
	}
}

func benchGroupCommit(b *testing.B, writers int, producer bool) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan" // as server.go
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	s, err := Open(ctx, pool, Options{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	for w := 0; w < writers; w++ {
		if _, _, err := s.Create(ctx, fmt.Sprintf("/w%d", w), CreateConfig{ContentType: "application/json"}, nil); err != nil {
			b.Fatal(err)
		}
	}
	msg := []byte(`{"n":1,"payload":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/w%d", w)
			var seq int64
			for next.Add(1) <= int64(b.N) {
				req := &AppendRequest{Path: path, ContentType: "application/json", Messages: [][]byte{msg}}
				if producer {
					req.Producer = &ProducerTuple{ID: "p", Seq: seq}
				}
				seq++
				if _, err := s.Append(ctx, req); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	b.ReportMetric(0, "ns/op")
}
