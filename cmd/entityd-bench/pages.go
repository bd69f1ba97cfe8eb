package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// PagesResult is the pages benchmark's output.
type PagesResult struct {
	Bench        string  `json:"bench"`
	URL          string  `json:"url"`
	Path         string  `json:"path"`
	TailSeq      int64   `json:"tail_seq"`
	FromSeq      int64   `json:"from_seq"`
	Pages        int     `json:"pages"`
	MessagesPage float64 `json:"messages_per_page"`
	Latency      Latency `json:"latency"`
}

// runPages times catch-up reads that start inside a long stream (-from, the middle by
// default): the first page from that offset, then each following page
// (Stream-Next-Offset). The cost of a page must not depend on how much of the stream
// lies before it: compare -from 0.01 with -from 0.99.
func runPages(args []string) error {
	fs := flag.NewFlagSet("pages", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	path := fs.String("path", "/fill-big", "the stream (uniform message sizes: the middle offset is computed)")
	n := fs.Int("n", 200, "pages to read")
	at := fs.Float64("from", 0.5, "where to start, as a fraction of the stream (0.5: the middle)")
	_ = fs.Parse(args)
	ctx, stop := signalContext()
	defer stop()
	client := newClient(1, c.gzip)
	url := c.base() + *path
	status, hdr, body, err := do(ctx, client, http.MethodHead, url, nil, nil)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("HEAD %s: %d %s %v", url, status, body, err)
	}
	seqS, posS, ok := strings.Cut(hdr.Get("Stream-Next-Offset"), "_")
	tailSeq, err1 := strconv.ParseInt(seqS, 10, 64)
	tailPos, err2 := strconv.ParseInt(posS, 10, 64)
	if !ok || err1 != nil || err2 != nil || tailSeq < 2 {
		return fmt.Errorf("%s: unexpected tail %q", url, hdr.Get("Stream-Next-Offset"))
	}
	if *at < 0 || *at >= 1 {
		return fmt.Errorf("-from must be in [0, 1)")
	}
	mid := max(1, int64(float64(tailSeq)**at))
	offset := fmt.Sprintf("%016d_%016d", mid, tailPos/tailSeq*mid)
	var lat []time.Duration
	msgs := 0
	for range *n {
		t0 := time.Now()
		status, hdr, body, err := do(ctx, client, http.MethodGet, url+"?offset="+offset, nil, nil)
		d := time.Since(t0)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("GET %s?offset=%s: %d %.200s %v", url, offset, status, body, err)
		}
		var page []json.RawMessage
		if err := json.Unmarshal(body, &page); err != nil {
			return err
		}
		lat = append(lat, d)
		msgs += len(page)
		offset = hdr.Get("Stream-Next-Offset")
		if hdr.Get("Stream-Up-To-Date") == "true" {
			break
		}
	}
	out := PagesResult{Bench: "pages", URL: c.base(), Path: *path, TailSeq: tailSeq, FromSeq: mid, Pages: len(lat),
		MessagesPage: float64(msgs) / float64(len(lat)), Latency: summarize(lat)}
	return emit(&c, out, func(w io.Writer) {
		fmt.Fprintf(w, "%s: %d pages from seq %d of %d, %.0f messages per page: p50 %.2f ms, p99 %.2f ms\n",
			*path, out.Pages, mid, tailSeq, out.MessagesPage, out.Latency.P50Ms, out.Latency.P99Ms)
	})
}
