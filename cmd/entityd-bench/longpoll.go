package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// LongPollResult is the JSON result of the long-poll benchmark.
type LongPollResult struct {
	Bench        string  `json:"bench"`
	Label        string  `json:"label,omitempty"`
	URL          string  `json:"url"`
	ReadURL      string  `json:"read_url,omitempty"` // the replica the long-polls read from, when not URL
	Rounds       int     `json:"rounds"`
	WaitMs       float64 `json:"wait_ms"`
	MessageBytes int     `json:"message_bytes"`
	// RTT: from just before the append is sent until the waiting reader has read the data.
	RTT Latency `json:"rtt"`
	// Append: the writer's own POST round trip during those rounds.
	Append Latency `json:"append"`
	// Ping: the cheapest request the server has (PingKind), and HEAD on the stream.
	PingKind       string   `json:"ping_kind"`
	Ping           Latency  `json:"ping"`
	Head           Latency  `json:"head"`
	OverheadP50Ms  float64  `json:"overhead_p50_ms"`
	OverheadMeanMs float64  `json:"overhead_mean_ms"`
	Timeouts       int      `json:"timeouts"`
	Errors         int      `json:"errors"`
	ErrorSamples   []string `json:"error_samples,omitempty"`
	Started        string   `json:"started"`
}

type pollResult struct {
	status int
	next   string
	cursor string
	body   []byte
	done   time.Time
	err    error
}

func longPoll(ctx context.Context, c *http.Client, streamURL, offset, cursor string) pollResult {
	q := url.Values{"offset": {offset}, "live": {"long-poll"}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	status, h, body, err := do(ctx, c, http.MethodGet, streamURL+"?"+q.Encode(), nil, nil)
	r := pollResult{status: status, body: body, done: time.Now(), err: err}
	if h != nil {
		r.next, r.cursor = h.Get("Stream-Next-Offset"), h.Get("Stream-Cursor")
	}
	return r
}

func streamTail(ctx context.Context, c *http.Client, streamURL string) (string, error) {
	status, h, body, err := do(ctx, c, http.MethodHead, streamURL, nil, nil)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("HEAD %s: %d %s", streamURL, status, body)
	}
	return h.Get("Stream-Next-Offset"), nil
}

// pingLoop times n sequential requests (after a few unrecorded ones).
func pingLoop(ctx context.Context, c *http.Client, method, u string, n int) (Latency, error) {
	lat := make([]time.Duration, 0, n)
	for i := -10; i < n; i++ {
		t0 := time.Now()
		status, _, body, err := do(ctx, c, method, u, nil, nil)
		d := time.Since(t0)
		if err != nil {
			return Latency{}, err
		}
		if status/100 != 2 {
			return Latency{}, fmt.Errorf("%s %s: %d %s", method, u, status, body)
		}
		if i >= 0 {
			lat = append(lat, d)
		}
	}
	return summarize(lat), nil
}

func runLongPoll(args []string) error {
	fs := flag.NewFlagSet("longpoll", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	rounds := fs.Int("n", 500, "round trips to measure (sequential)")
	wait := fs.Duration("wait", 20*time.Millisecond, "delay between issuing the long-poll and appending, so the reader is parked in the server's wait")
	size := fs.Int("size", 100, "bytes per message")
	ping := fs.String("ping", "auto", "baseline request: health (GET /_electric/health), head (HEAD on the stream), or auto (health if the server has it)")
	readURL := fs.String("read-url", "", "base URL of another replica on the same database: the long-polls read there while the appends go to -url (a cross-replica wake)")
	_ = fs.Parse(args)
	if *rounds < 1 || *size < 40 {
		return fmt.Errorf("-n must be at least 1 and -size at least 40")
	}
	ctx, stop := signalContext()
	defer stop()
	client := newClient(4, c.gzip)
	base := c.base()
	started := time.Now().UTC()
	streamURL := fmt.Sprintf("%s/v1/stream/bench-lp-%s", base, runID())
	if err := createStream(ctx, client, streamURL, "application/json"); err != nil {
		return err
	}
	defer deleteStream(context.Background(), client, streamURL)
	readStreamURL := streamURL
	if *readURL != "" {
		readStreamURL = strings.TrimRight(*readURL, "/") + strings.TrimPrefix(streamURL, base)
	}

	out := LongPollResult{Bench: "longpoll", Label: c.label, URL: base, ReadURL: *readURL, Rounds: *rounds,
		WaitMs: ms(*wait), MessageBytes: *size, Started: started.Format(time.RFC3339)}
	pingKind := *ping
	if pingKind == "auto" {
		pingKind = "head"
		if status, _, _, err := do(ctx, client, http.MethodGet, base+"/_electric/health", nil, nil); err == nil && status == http.StatusOK {
			pingKind = "health"
		}
	}
	var err error
	switch pingKind {
	case "health":
		out.PingKind = "GET /_electric/health"
		out.Ping, err = pingLoop(ctx, client, http.MethodGet, base+"/_electric/health", *rounds)
	case "head":
		out.PingKind = "HEAD stream"
	default:
		return fmt.Errorf("-ping must be auto, health or head")
	}
	if err != nil {
		return err
	}
	if out.Head, err = pingLoop(ctx, client, http.MethodHead, streamURL, *rounds); err != nil {
		return err
	}
	if pingKind == "head" {
		out.Ping = out.Head
	}

	tail, err := streamTail(ctx, client, streamURL)
	if err != nil {
		return err
	}
	var errs errorLog
	var rtts, appends []time.Duration
	cursor := ""
	const warmRounds = 10
	for i := -warmRounds; i < *rounds && ctx.Err() == nil; {
		polled := make(chan pollResult, 1)
		go func(offset, cur string) { polled <- longPoll(ctx, client, readStreamURL, offset, cur) }(tail, cursor)
		time.Sleep(*wait)
		msg := jsonMessage(0, i+warmRounds, *size)
		t0 := time.Now()
		status, _, body, aerr := do(ctx, client, http.MethodPost, streamURL, map[string]string{"Content-Type": "application/json"}, msg)
		appendDur := time.Since(t0)
		r := <-polled
		if aerr != nil || (status != http.StatusNoContent && status != http.StatusOK) {
			out.Errors++
			errs.add("append: %d %s %v", status, bytes.TrimSpace(body), aerr)
			if tail, err = streamTail(ctx, client, streamURL); err != nil {
				return err
			}
			continue
		}
		switch {
		case r.err != nil:
			if errors.Is(r.err, context.Canceled) {
				return r.err
			}
			out.Errors++
			errs.add("long-poll: %v", r.err)
		case r.status == http.StatusNoContent:
			// The server's timeout ended the wait before the append: this round is void.
			out.Timeouts++
		case r.status != http.StatusOK:
			out.Errors++
			errs.add("long-poll: %d %s", r.status, r.body)
		case !bytes.Contains(r.body, msg[:len(msg)-4]):
			out.Errors++
			errs.add("long-poll answered without the appended message: %.200s", r.body)
		case r.done.Before(t0):
			out.Errors++
			errs.add("long-poll answered before the append (offset %s)", tail)
		default:
			if i >= 0 {
				rtts = append(rtts, r.done.Sub(t0))
				appends = append(appends, appendDur)
			}
			tail, cursor = r.next, r.cursor
			i++
			continue
		}
		if tail, err = streamTail(ctx, client, streamURL); err != nil {
			return err
		}
		if out.Errors > *rounds/10+10 {
			return fmt.Errorf("too many errors: %v", errs.samples)
		}
	}
	out.RTT, out.Append = summarize(rtts), summarize(appends)
	out.ErrorSamples = errs.samples
	out.OverheadP50Ms = out.RTT.P50Ms - out.Ping.P50Ms
	out.OverheadMeanMs = out.RTT.MeanMs - out.Ping.MeanMs
	return emit(&c, out, func(w io.Writer) {
		fmt.Fprintf(w, "longpoll %s  rounds=%d  wait=%s before each append  message=%d B\n", base, out.Rounds, *wait, out.MessageBytes)
		fmt.Fprintf(w, "%-28s %9s %9s %9s %9s %9s\n", "", "mean", "p50", "p90", "p99", "max")
		row := func(name string, l Latency) {
			fmt.Fprintf(w, "%-28s %9s %9s %9s %9s %9s\n", name, fmtMs(l.MeanMs), fmtMs(l.P50Ms), fmtMs(l.P90Ms), fmtMs(l.P99Ms), fmtMs(l.MaxMs))
		}
		row("round trip (append→reader)", out.RTT)
		row("append (writer's POST)", out.Append)
		row("ping: "+out.PingKind, out.Ping)
		if pingKind != "head" {
			row("HEAD stream", out.Head)
		}
		fmt.Fprintf(w, "overhead (RTT − ping): p50 %s, mean %s; timeouts %d, errors %d\n",
			fmtMs(out.OverheadP50Ms), fmtMs(out.OverheadMeanMs), out.Timeouts, out.Errors)
		printSamples(w, out.ErrorSamples)
	})
}
