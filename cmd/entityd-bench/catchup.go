package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// CatchupRead is one timed read of the whole stream.
type CatchupRead struct {
	Seconds     float64 `json:"seconds"`
	Bytes       int64   `json:"bytes"`
	Requests    int     `json:"requests"`
	MBPerSec    float64 `json:"mb_per_sec"`
	MsgsPerSec  float64 `json:"msgs_per_sec"`
	AvgReqBytes int64   `json:"avg_request_bytes"`
}

// CatchupResult is the JSON result of the catch-up benchmark.
type CatchupResult struct {
	Bench        string        `json:"bench"`
	Label        string        `json:"label,omitempty"`
	URL          string        `json:"url"`
	Messages     int           `json:"messages"`
	MessageBytes int           `json:"message_bytes"`
	Batch        int           `json:"batch"`
	FillSeconds  float64       `json:"fill_seconds"`
	Reads        []CatchupRead `json:"reads"`
	// Median is the read with the median time among Reads.
	Median  CatchupRead `json:"median"`
	Started string      `json:"started"`
}

// readAll reads the stream from the start, following Stream-Next-Offset until a response
// says Stream-Up-To-Date. It returns the body bytes and the number of requests. With
// check set it also verifies that the messages' "n" fields run 0, 1, 2, ... with no gap,
// duplicate or reordering, and returns how many there were.
func readAll(ctx context.Context, c *http.Client, streamURL string, check bool) (int64, int, int, error) {
	var (
		total    int64
		requests int
		msgs     int
		buf      bytes.Buffer
	)
	offset := "-1"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, streamURL+"?"+url.Values{"offset": {offset}}.Encode(), nil)
		if err != nil {
			return 0, 0, 0, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, 0, 0, err
		}
		buf.Reset()
		_, err = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, 0, 0, err
		}
		requests++
		if resp.StatusCode != http.StatusOK {
			return 0, 0, 0, fmt.Errorf("GET offset=%s: %d %.200s", offset, resp.StatusCode, buf.Bytes())
		}
		total += int64(buf.Len())
		if check {
			if msgs, err = checkSequence(buf.Bytes(), msgs); err != nil {
				return 0, 0, 0, fmt.Errorf("GET offset=%s: %w", offset, err)
			}
		}
		next := resp.Header.Get("Stream-Next-Offset")
		if resp.Header.Get("Stream-Up-To-Date") == "true" {
			return total, requests, msgs, nil
		}
		if next == "" || next == offset {
			return 0, 0, 0, fmt.Errorf("GET offset=%s: no progress (Stream-Next-Offset %q) and not up to date", offset, next)
		}
		offset = next
		if requests > 10_000_000 {
			return 0, 0, 0, fmt.Errorf("runaway read")
		}
	}
}

func runCatchup(args []string) error {
	fs := flag.NewFlagSet("catchup", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	messages := fs.Int("messages", 100_000, "messages to fill the stream with")
	size := fs.Int("size", 100, "bytes per message (JSON object)")
	batch := fs.Int("batch", 500, "messages per fill POST (a JSON array)")
	repeat := fs.Int("repeat", 3, "timed reads of the whole stream (the median is reported)")
	_ = fs.Parse(args)
	if *messages < 1 || *batch < 1 || *repeat < 1 || *size < 40 {
		return fmt.Errorf("-messages, -batch and -repeat must be at least 1, -size at least 40")
	}
	ctx, stop := signalContext()
	defer stop()
	client := newClient(2, c.gzip)
	base := c.base()
	started := time.Now().UTC()
	streamURL := fmt.Sprintf("%s/v1/stream/bench-catchup-%s", base, runID())
	if err := createStream(ctx, client, streamURL, "application/json"); err != nil {
		return err
	}
	defer deleteStream(context.Background(), client, streamURL)

	// Fill: JSON arrays of batch messages, one POST each, in order.
	t0 := time.Now()
	var body []byte
	for n := 0; n < *messages; {
		k := min(*batch, *messages-n)
		body = append(body[:0], '[')
		for j := 0; j < k; j++ {
			if j > 0 {
				body = append(body, ',')
			}
			body = append(body, jsonMessage(1, n+j, *size)...)
		}
		body = append(body, ']')
		status, _, rb, err := do(ctx, client, http.MethodPost, streamURL, map[string]string{"Content-Type": "application/json"}, body)
		if err != nil {
			return fmt.Errorf("fill: %w", err)
		}
		if status != http.StatusNoContent && status != http.StatusOK {
			return fmt.Errorf("fill: %d %s", status, rb)
		}
		n += k
	}
	out := CatchupResult{Bench: "catchup", Label: c.label, URL: base, Messages: *messages, MessageBytes: *size,
		Batch: *batch, FillSeconds: time.Since(t0).Seconds(), Started: started.Format(time.RFC3339)}

	// One untimed read checks that every message comes back once, in order.
	_, _, got, err := readAll(ctx, client, streamURL, true)
	if err != nil {
		return err
	}
	if got != *messages {
		return fmt.Errorf("verification read returned %d messages, want %d", got, *messages)
	}
	for range *repeat {
		t := time.Now()
		n, reqs, _, err := readAll(ctx, client, streamURL, false)
		if err != nil {
			return err
		}
		sec := time.Since(t).Seconds()
		out.Reads = append(out.Reads, CatchupRead{Seconds: sec, Bytes: n, Requests: reqs,
			MBPerSec: float64(n) / 1e6 / sec, MsgsPerSec: float64(*messages) / sec, AvgReqBytes: n / int64(reqs)})
	}
	sorted := slices.Clone(out.Reads)
	slices.SortFunc(sorted, func(a, b CatchupRead) int {
		switch {
		case a.Seconds < b.Seconds:
			return -1
		case a.Seconds > b.Seconds:
			return 1
		}
		return 0
	})
	out.Median = sorted[len(sorted)/2]
	return emit(&c, out, func(w io.Writer) {
		fmt.Fprintf(w, "catchup %s  messages=%d × %d B  filled in %.2fs (batches of %d)\n",
			base, out.Messages, out.MessageBytes, out.FillSeconds, out.Batch)
		fmt.Fprintf(w, "%8s %10s %10s %12s %9s %12s\n", "read", "seconds", "MB/s", "msgs/s", "requests", "B/request")
		for i, r := range out.Reads {
			fmt.Fprintf(w, "%8d %10.3f %10.1f %12.0f %9d %12d\n", i+1, r.Seconds, r.MBPerSec, r.MsgsPerSec, r.Requests, r.AvgReqBytes)
		}
		m := out.Median
		fmt.Fprintf(w, "%8s %10.3f %10.1f %12.0f %9d %12d\n", "median", m.Seconds, m.MBPerSec, m.MsgsPerSec, m.Requests, m.AvgReqBytes)
	})
}

// checkSequence scans a response body for the "n" members jsonMessage writes and checks
// they continue the sequence from next; it returns the next expected value.
func checkSequence(body []byte, next int) (int, error) {
	key := []byte(`,"n":`)
	for {
		i := bytes.Index(body, key)
		if i < 0 {
			return next, nil
		}
		body = body[i+len(key):]
		v, j := 0, 0
		for j < len(body) && body[j] >= '0' && body[j] <= '9' {
			v = v*10 + int(body[j]-'0')
			j++
		}
		if j == 0 || v != next {
			return next, fmt.Errorf("message %d out of sequence (read %q)", next, body[:min(j+8, len(body))])
		}
		next++
		body = body[j:]
	}
}
