package streamdb

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
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

// BenchmarkAppendOneWriter: one writer appending in a loop, so each transaction carries
// one append (what a single client's send costs the commit path), and the process's CPU
// time per append, which a loaded machine disturbs less than the rate.
//
//	go run ./internal/tools/withpg -- go test -run '^$' -bench AppendOneWriter -benchmem -benchtime 4000x ./streamdb
func BenchmarkAppendOneWriter(b *testing.B) {
	for _, kind := range []string{"plain", "dedupe"} {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(pgtest.URL(b))
			if err != nil {
				b.Fatal(err)
			}
			cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
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
			if _, _, err := s.Create(ctx, "/one", CreateConfig{ContentType: "application/json"}, nil); err != nil {
				b.Fatal(err)
			}
			msg := []byte(`{"n":1,"payload":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)
			var r0, r1 syscall.Rusage
			b.ResetTimer()
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
			for i := 0; i < b.N; i++ {
				req := &AppendRequest{Path: "/one", ContentType: "application/json", Messages: [][]byte{msg}}
				if kind == "dedupe" {
					req.Dedupe = &Dedupe{Key: fmt.Sprint(i), Hash: []byte{1, 2, 3}, Ref: "r"}
				}
				if _, err := s.Append(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
			b.StopTimer()
			cpu := (r1.Utime.Nano() - r0.Utime.Nano()) + (r1.Stime.Nano() - r0.Stime.Nano())
			b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}
