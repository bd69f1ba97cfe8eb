package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWakeOffsetSeq(t *testing.T) {
	for off, want := range map[string]int64{"0000000000000042_0000000000001234": 42, "7_9": 7, "": -1, "x_1": -1, "_1": -1} {
		if got := wakeOffsetSeq(off); got != want {
			t.Errorf("wakeOffsetSeq(%q) = %d, want %d", off, got, want)
		}
	}
}

// The control endpoint's record lines parse back into the same records.
func TestWakeRecordsRoundTrip(t *testing.T) {
	ws := &wakeServer{rec: newWakeRecorder(), commits: &wakeCommitCounter{}}
	in := []wakeRec{
		{E: 0, N: 1, Sent: 100, Start: 150, End: 151, Seq: 3, Attempt: 1, URL: "/bench/w-r-0"},
		{E: 12, N: -5, Sent: -1, Start: 0, End: 9, Seq: 1 << 40, Attempt: 2, URL: "/bench/w-r-12"},
	}
	for _, r := range in {
		ws.rec.add("run1", r)
	}
	ws.rec.add("other", wakeRec{N: 99, URL: "/x"})
	srv := httptest.NewServer(ws.ctlHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/records?run=run1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := parseWakeRecords(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("got %d records, want %d", len(got), len(in))
	}
	for i := range in {
		if got[i] != in[i] {
			t.Errorf("record %d: got %+v, want %+v", i, got[i], in[i])
		}
	}
}

func TestAnalyzeWake(t *testing.T) {
	ids := []string{"w-r-0", "w-r-1"}
	const ms = int64(1e6)
	msgs := []*sentMsg{
		{e: 0, n: 0, t: 1 * ms, resp: 3 * ms, ok: true},   // warm-up, delivered
		{e: 0, n: 1, t: 10 * ms, resp: 12 * ms, ok: true}, // in window
		{e: 1, n: 2, t: 11 * ms, resp: 13 * ms, ok: true}, // in window, delivered twice
		{e: 1, n: 3, t: 12 * ms, resp: 14 * ms, ok: true}, // never delivered
		{e: 0, n: 4, t: 13 * ms, resp: 14 * ms, ok: false, status: 500},
	}
	recs := []wakeRec{
		{E: 0, N: 0, Start: 2 * ms, End: 2 * ms, Seq: 2, Attempt: 1, URL: "/bench/w-r-0"},
		{E: 0, N: 1, Start: 14 * ms, End: 15 * ms, Seq: 3, Attempt: 1, URL: "/bench/w-r-0"},
		{E: 1, N: 2, Start: 12 * ms, End: 12 * ms, Seq: 2, Attempt: 1, URL: "/bench/w-r-1"},
		{E: 1, N: 2, Start: 16 * ms, End: 16 * ms, Seq: 2, Attempt: 2, URL: "/bench/w-r-1"},
	}
	r := analyzeWake(msgs, recs, ids, 10*ms, 20*ms)
	d := r.Delivery
	if d.Expected != 4 || d.Delivered != 3 || d.Missing != 1 || d.Duplicates != 1 || d.Retries != 1 ||
		d.Unexpected != 0 || d.WrongEntity != 0 || d.OutOfOrder != 1 || d.ExactlyOnceOK {
		t.Fatalf("delivery = %+v", d)
	}
	if r.Sends.InWindow != 3 || r.Sends.Errors != 1 {
		t.Fatalf("sends = %+v", r.Sends)
	}
	// Latency over the in-window messages that were delivered: n=1 (4 ms) and n=2 (1 ms).
	if l := r.Latency.SendToStart; l.N != 2 || l.MinMs != 1 || l.MaxMs != 4 {
		t.Fatalf("send→start = %+v", l)
	}
	// n=2 started before its response arrived.
	if l := r.Latency.ResponseToStart; l.MinMs != -1 {
		t.Fatalf("response→start = %+v", l)
	}
	if r.Throughput.HandledInWindow != 3 || r.Throughput.BacklogAtEnd != 1 {
		t.Fatalf("throughput = %+v", r.Throughput)
	}
}
