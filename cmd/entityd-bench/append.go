package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// AppendResult is the JSON result of the append benchmark.
type AppendResult struct {
	Bench         string   `json:"bench"`
	Label         string   `json:"label,omitempty"`
	URL           string   `json:"url"`
	Streams       int      `json:"streams"`
	Writers       int      `json:"writers"`
	MessageBytes  int      `json:"message_bytes"`
	DurationS     float64  `json:"duration_s"`
	WarmupS       float64  `json:"warmup_s"`
	Appends       int      `json:"appends"`
	AppendsPerSec float64  `json:"appends_per_sec"`
	Latency       Latency  `json:"latency"`
	Errors        int      `json:"errors"`
	ErrorSamples  []string `json:"error_samples,omitempty"`
	Started       string   `json:"started"`
}

// jsonMessage is a JSON object of exactly size bytes (size >= 40).
func jsonMessage(writer, seq, size int) []byte {
	b := make([]byte, 0, size)
	b = append(b, `{"w":`...)
	b = strconv.AppendInt(b, int64(writer), 10)
	b = append(b, `,"n":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, `,"p":"`...)
	for len(b) < size-2 {
		b = append(b, 'x')
	}
	return append(b, '"', '}')
}

// createStream PUTs a stream and accepts 201 (created) or 200 (exists, same config).
func createStream(ctx context.Context, c *http.Client, url, contentType string) error {
	status, _, body, err := do(ctx, c, http.MethodPut, url, map[string]string{"Content-Type": contentType}, nil)
	if err != nil {
		return fmt.Errorf("create %s: %w", url, err)
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return fmt.Errorf("create %s: %d %s", url, status, body)
	}
	return nil
}

func deleteStream(ctx context.Context, c *http.Client, url string) {
	_, _, _, _ = do(ctx, c, http.MethodDelete, url, nil, nil)
}

func runAppend(args []string) error {
	fs := flag.NewFlagSet("append", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	streams := fs.Int("streams", 64, "streams to create (/v1/stream/bench-<run>-<i>)")
	writers := fs.Int("writers", 64, "concurrent writers; writer i appends to stream i mod streams")
	size := fs.Int("size", 100, "bytes per message (one JSON object per POST)")
	dur := fs.Duration("d", 10*time.Second, "measurement duration")
	warmup := fs.Duration("warmup", 2*time.Second, "warm-up before measuring (not recorded)")
	cleanup := fs.Bool("cleanup", true, "delete the streams afterwards")
	_ = fs.Parse(args)
	if *streams < 1 || *writers < 1 || *size < 40 {
		return fmt.Errorf("-streams and -writers must be at least 1, -size at least 40")
	}
	ctx, stop := signalContext()
	defer stop()
	client := withToken(newClient(*writers, c.gzip), c.token)
	base := c.base()
	started := time.Now().UTC()
	run := runID()
	urls := make([]string, *streams)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/v1/stream/bench-%s-%d", base, run, i)
	}
	if err := parallel(ctx, 16, len(urls), func(i int) error {
		return createStream(ctx, client, urls[i], "application/json")
	}); err != nil {
		return err
	}
	if *cleanup {
		defer func() {
			_ = parallel(context.Background(), 16, len(urls), func(i int) error {
				deleteStream(context.Background(), client, urls[i])
				return nil
			})
		}()
	}

	var errs errorLog
	res := closedLoop(ctx, *writers, *warmup, *dur, func(ctx context.Context, w, i int) bool {
		url := urls[w%len(urls)]
		b := jsonMessage(w, i, *size)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			errs.add("%v", err)
			return false
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				errs.add("POST %s: %v", url, err)
			}
			return false
		}
		if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
			rb, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			errs.add("POST %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(rb)))
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return true
	})
	ok := res.Ops - res.Errors
	out := AppendResult{
		Bench: "append", Label: c.label, URL: base, Streams: *streams, Writers: *writers, MessageBytes: *size,
		DurationS: dur.Seconds(), WarmupS: warmup.Seconds(),
		Appends: ok, AppendsPerSec: float64(ok) / res.Elapsed.Seconds(),
		Latency: summarize(res.Lat), Errors: res.Errors, ErrorSamples: errs.samples,
		Started: started.Format(time.RFC3339),
	}
	return emit(&c, out, func(w io.Writer) {
		fmt.Fprintf(w, "append %s  streams=%d  writers=%d  message=%d B  d=%s (+%s warm-up)\n",
			base, out.Streams, out.Writers, out.MessageBytes, dur, warmup)
		latencyTable(w, "appends", out.Appends, out.AppendsPerSec, out.Latency, out.Errors)
		printSamples(w, out.ErrorSamples)
	})
}
