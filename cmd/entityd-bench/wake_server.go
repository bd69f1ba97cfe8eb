package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/server"
	"github.com/entityd/entityd/wake"
)

// The wake-server half of the wake benchmark: a complete entityd (server.New) with one
// Go entity type, "bench", whose handler records, for every inbox wake, when it started
// against the send timestamp the load generator put in the payload, and returns nil (a
// no-op; -write-text makes it write one text event). A control listener (-ctl) serves
// what was recorded, counters, and net/http/pprof.

// benchType is the entity type the wake benchmark registers and sends to.
const benchType = "bench"

// wakePayload is what wake-load sends: run id, entity index, message number (unique in
// the run) and the send timestamp (monoNow, taken just before the request was written).
type wakePayload struct {
	R string `json:"r"`
	E int32  `json:"e"`
	N int64  `json:"n"`
	T int64  `json:"t"`
}

// wakeRec is one handler run of an inbox wake.
type wakeRec struct {
	E       int32
	Attempt int32
	N       int64
	Sent    int64 // payload's send timestamp
	Start   int64 // first statement of the handler
	End     int64 // just before the handler returned
	Seq     int64 // stream sequence number of the message (from the wake's offset)
	URL     string
}

// wakeRecorder keeps the handler runs of every run id since the last reset.
type wakeRecorder struct {
	mu      sync.Mutex
	runs    map[string]*[]wakeRec
	spawns  atomic.Int64 // spawn wakes
	inbox   atomic.Int64 // inbox wakes with a bench payload
	foreign atomic.Int64 // inbox wakes without one
	other   atomic.Int64 // any other wake
}

func newWakeRecorder() *wakeRecorder { return &wakeRecorder{runs: map[string]*[]wakeRec{}} }

func (r *wakeRecorder) add(run string, rec wakeRec) {
	r.mu.Lock()
	recs := r.runs[run]
	if recs == nil {
		s := make([]wakeRec, 0, 1<<14)
		recs = &s
		r.runs[run] = recs
	}
	*recs = append(*recs, rec)
	r.mu.Unlock()
}

func (r *wakeRecorder) count(run string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if recs := r.runs[run]; recs != nil {
		return len(*recs)
	}
	return 0
}

func (r *wakeRecorder) snapshot(run string) []wakeRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	if recs := r.runs[run]; recs != nil {
		return append([]wakeRec(nil), (*recs)...)
	}
	return nil
}

func (r *wakeRecorder) reset() {
	r.mu.Lock()
	r.runs = map[string]*[]wakeRec{}
	r.mu.Unlock()
	r.spawns.Store(0)
	r.inbox.Store(0)
	r.foreign.Store(0)
	r.other.Store(0)
}

// handler is the bench entity's handler. It does no I/O: it parses the payload, records
// the times, and returns nil, so what is measured is entityd's delivery and
// acknowledgement, not the handler.
func (r *wakeRecorder) handler(writeText bool) runtime.Handler {
	return func(ctx *runtime.Context) error {
		start := monoNow()
		w, ok := ctx.Wake.(runtime.InboxWake)
		if !ok {
			if _, spawn := ctx.Wake.(runtime.SpawnWake); spawn {
				r.spawns.Add(1)
			} else {
				r.other.Add(1)
			}
			return nil
		}
		var p wakePayload
		if err := json.Unmarshal(w.Payload, &p); err != nil || p.R == "" {
			r.foreign.Add(1)
			return nil
		}
		if writeText {
			if err := ctx.WriteText("handled " + strconv.FormatInt(p.N, 10)); err != nil {
				return err
			}
		}
		r.inbox.Add(1)
		r.add(p.R, wakeRec{E: p.E, N: p.N, Sent: p.T, Start: start, End: monoNow(), Seq: wakeOffsetSeq(w.Offset),
			Attempt: int32(ctx.Attempt), URL: ctx.Entity.URL})
		return nil
	}
}

// offsetSeq is the sequence number part of a stream offset ("<seq>_<pos>"), or -1.
func wakeOffsetSeq(off string) int64 {
	i := strings.IndexByte(off, '_')
	if i <= 0 {
		return -1
	}
	n, err := strconv.ParseInt(off[:i], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// wakeCommitCounter is a zap core that sees only streamdb's "append batch committed" debug
// entries (one per group-commit transaction, with the number of appends it carried) and
// counts them; every other entry passes it by without being encoded.
type wakeCommitCounter struct {
	commits atomic.Int64
	appends atomic.Int64
	tookNs  atomic.Int64
	// hist[i] counts transactions carrying n appends with bits.Len(n) == i (1, 2–3, 4–7, …).
	hist [16]atomic.Int64
}

func (c *wakeCommitCounter) Enabled(l zapcore.Level) bool      { return l == zapcore.DebugLevel }
func (c *wakeCommitCounter) With([]zapcore.Field) zapcore.Core { return c }
func (c *wakeCommitCounter) Sync() error                       { return nil }
func (c *wakeCommitCounter) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if ent.Level == zapcore.DebugLevel && ent.Message == "append batch committed" {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *wakeCommitCounter) Write(_ zapcore.Entry, fields []zapcore.Field) error {
	for _, f := range fields {
		switch f.Key {
		case "appends":
			n := f.Integer
			c.commits.Add(1)
			c.appends.Add(n)
			c.hist[min(bits.Len64(uint64(n)), len(c.hist)-1)].Add(1)
		case "took":
			c.tookNs.Add(f.Integer)
		}
	}
	return nil
}

// wakeCommitStats is the commit counter as the control endpoint shows it.
type wakeCommitStats struct {
	Commits int64 `json:"commits"`
	Appends int64 `json:"appends"`
	TookNs  int64 `json:"took_ns"`
	// Hist: index i counts transactions of n appends with 2^(i-1) ≤ n < 2^i.
	Hist []int64 `json:"hist"`
}

func (c *wakeCommitCounter) stats() wakeCommitStats {
	s := wakeCommitStats{Commits: c.commits.Load(), Appends: c.appends.Load(), TookNs: c.tookNs.Load(), Hist: make([]int64, len(c.hist))}
	for i := range c.hist {
		s.Hist[i] = c.hist[i].Load()
	}
	return s
}

// wakeServerStats is GET /stats of the control listener.
type wakeServerStats struct {
	PID        int             `json:"pid"`
	NowMono    int64           `json:"now_mono"`
	SpawnWakes int64           `json:"spawn_wakes"`
	InboxWakes int64           `json:"inbox_wakes"`
	Foreign    int64           `json:"foreign_inbox_wakes"`
	OtherWakes int64           `json:"other_wakes"`
	RunRecords int             `json:"run_records"`
	Commit     wakeCommitStats `json:"commit"`
	Goroutines int             `json:"goroutines"`
	NumGC      uint32          `json:"num_gc"`
}

// wakeAddrs is what wake-server writes to -addr-file once it serves.
type wakeAddrs struct {
	API string `json:"api"`
	Ctl string `json:"ctl"`
	PID int    `json:"pid"`
}

type wakeServerFlags struct {
	addr, ctl, addrFile, dbURL, logLevel string
	lanes, conns                         int
	writeText                            bool
	idleRelease                          time.Duration
}

func (f *wakeServerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "127.0.0.1:0", "API listen address")
	fs.StringVar(&f.ctl, "ctl", "127.0.0.1:0", "control listen address (records, counters, /debug/pprof/)")
	fs.StringVar(&f.addrFile, "addr-file", "", "write {api, ctl, pid} as JSON to this file once serving")
	fs.StringVar(&f.dbURL, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (default $DATABASE_URL)")
	fs.StringVar(&f.logLevel, "log-level", "warn", "server log level")
	fs.IntVar(&f.lanes, "commit-lanes", 0, "group-commit lanes (0: the server default)")
	fs.IntVar(&f.conns, "db-max-conns", 0, "connection pool size (0: the server default)")
	fs.BoolVar(&f.writeText, "write-text", false, "the handler writes one text event per inbox wake instead of nothing")
	fs.DurationVar(&f.idleRelease, "idle-release", 0, "wake.Options.IdleRelease (0: the default)")
}

// wakeServer is a running bench server.
type wakeServer struct {
	rec     *wakeRecorder
	commits *wakeCommitCounter
	addrs   wakeAddrs
}

// startWakeServer starts entityd and the control listener; it returns once both serve.
// The server stops when ctx is cancelled; done receives Run's result.
func startWakeServer(ctx context.Context, f *wakeServerFlags) (*wakeServer, <-chan error, error) {
	if f.dbURL == "" {
		return nil, nil, errors.New("wake-server: set DATABASE_URL or -database-url")
	}
	var level zapcore.Level
	if err := level.Set(f.logLevel); err != nil {
		return nil, nil, err
	}
	lc := zap.NewProductionConfig()
	lc.Level = zap.NewAtomicLevelAt(level)
	base, err := lc.Build()
	if err != nil {
		return nil, nil, err
	}
	commits := &wakeCommitCounter{}
	logger := base.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, commits) }))

	ws := &wakeServer{rec: newWakeRecorder(), commits: commits}
	ctlLn, err := net.Listen("tcp", f.ctl)
	if err != nil {
		return nil, nil, fmt.Errorf("control listener: %w", err)
	}
	ctlSrv := &http.Server{Handler: ws.ctlHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ctlSrv.Serve(ctlLn) }()
	go func() { <-ctx.Done(); _ = ctlSrv.Close() }()

	ready := make(chan net.Addr, 1)
	cfg := server.Config{DatabaseURL: f.dbURL, Addr: f.addr, Logger: logger, CommitLanes: f.lanes, DBMaxConns: f.conns,
		Wake:  wake.Options{IdleRelease: f.idleRelease},
		Ready: func(a net.Addr) { ready <- a }}
	def := runtime.EntityDefinition{Type: benchType,
		Description: "entityd-bench wake target: records handler start times, then returns (no-op)",
		Handler:     ws.rec.handler(f.writeText)}
	srv := server.New(cfg, def)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case a := <-ready:
		ws.addrs = wakeAddrs{API: "http://" + a.String(), Ctl: "http://" + ctlLn.Addr().String(), PID: os.Getpid()}
	case err := <-done:
		_ = ctlSrv.Close()
		if err == nil {
			err = errors.New("server stopped during startup")
		}
		return nil, nil, err
	}
	if f.addrFile != "" {
		b, _ := json.Marshal(ws.addrs)
		tmp := f.addrFile + ".tmp"
		if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
			return nil, nil, err
		}
		if err := os.Rename(tmp, f.addrFile); err != nil {
			return nil, nil, err
		}
	}
	return ws, done, nil
}

func (ws *wakeServer) stats(run string) wakeServerStats {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return wakeServerStats{PID: os.Getpid(), NowMono: monoNow(), SpawnWakes: ws.rec.spawns.Load(), InboxWakes: ws.rec.inbox.Load(),
		Foreign: ws.rec.foreign.Load(), OtherWakes: ws.rec.other.Load(), RunRecords: ws.rec.count(run),
		Commit: ws.commits.stats(), Goroutines: goruntime.NumGoroutine(), NumGC: ms.NumGC}
}

// ctlHandler serves the control API:
//
//	GET  /stats?run=R    counters (wakeServerStats)
//	GET  /records?run=R  one line per recorded handler run: e n sent start end seq attempt url
//	POST /reset          forget all records and counters (not the commit counter)
//	/debug/pprof/…       net/http/pprof
func (ws *wakeServer) ctlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ws.stats(r.URL.Query().Get("run")))
	})
	mux.HandleFunc("GET /records", func(w http.ResponseWriter, r *http.Request) {
		recs := ws.rec.snapshot(r.URL.Query().Get("run"))
		w.Header().Set("Content-Type", "text/plain")
		bw := bufio.NewWriterSize(w, 64<<10)
		var line []byte
		for _, x := range recs {
			line = line[:0]
			line = strconv.AppendInt(line, int64(x.E), 10)
			for _, v := range []int64{x.N, x.Sent, x.Start, x.End, x.Seq, int64(x.Attempt)} {
				line = append(line, ' ')
				line = strconv.AppendInt(line, v, 10)
			}
			line = append(line, ' ')
			line = append(line, x.URL...)
			line = append(line, '\n')
			_, _ = bw.Write(line)
		}
		_ = bw.Flush()
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		ws.rec.reset()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func runWakeServer(args []string) error {
	fs := flag.NewFlagSet("wake-server", flag.ExitOnError)
	var f wakeServerFlags
	f.register(fs)
	_ = fs.Parse(args)
	if !monoShared {
		return errors.New("wake-server: this platform has no clock shared between processes; use \"entityd-bench wake\"")
	}
	ctx, stop := signalContext()
	defer stop()
	ws, done, err := startWakeServer(ctx, &f)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wake-server: api %s  ctl %s  pid %d\n", ws.addrs.API, ws.addrs.Ctl, ws.addrs.PID)
	return <-done
}
