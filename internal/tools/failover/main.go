//go:build unix

// Command failover runs entityd through a PostgreSQL failover on this machine and
// reports the write outage and the acknowledged-versus-present counts: a primary with a
// synchronous standby (initdb, pg_basebackup, synchronous_standby_names), entityd on a
// multi-host DATABASE_URL with target_session_attrs=read-write, writers appending to a
// stream; the primary is killed with SIGKILL and the standby promoted (pg_promote).
//
//	go build -o bin/entityd ./cmd/server
//	go run ./internal/tools/failover -entityd bin/entityd -before 10s -after 20s -writers 16
//
// `make test` runs a short version (internal/failover's test).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/failover"
	"github.com/entityd/entityd/internal/pgcluster"
)

func main() {
	bin := flag.String("entityd", "bin/entityd", "the entityd binary (make build)")
	writers := flag.Int("writers", 16, "concurrent writers")
	before := flag.Duration("before", 10*time.Second, "load before the primary is killed")
	detect := flag.Duration("detect", time.Second, "from the kill to the promotion (what a failover manager would take)")
	after := flag.Duration("after", 20*time.Second, "load after the promotion")
	keep := flag.Bool("keep", false, "keep the clusters' directory (its path is printed)")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "failover: the entityd binary:", err, "(run make build first)")
		os.Exit(2)
	}
	dir, err := pgcluster.MkdirTemp("", "entityd-failover-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	log, _ := zap.NewDevelopment()
	rep, err := failover.Run(context.Background(), failover.Options{Dir: dir, Entityd: abs, Writers: *writers,
		Before: *before, Detect: *detect, After: *after, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
	fmt.Printf("| writers | acknowledged | present after failover | lost | failed attempts | kill → writes again | promotion → writes again |\n")
	fmt.Printf("|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| %d | %d | %d | %d | %d | %v | %v |\n", *writers, rep.Acked, rep.Present, rep.Lost, rep.Failed,
		rep.Outage.Round(time.Millisecond), rep.AfterPromote.Round(time.Millisecond))
	if *keep {
		fmt.Println("clusters kept in", dir)
	}
	if rep.Lost > 0 || !rep.Recovered {
		os.Exit(1)
	}
}
