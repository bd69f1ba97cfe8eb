package acp_test

import (
	"slices"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// BenchmarkPromptToFirstChunk measures an editor's wait from session/prompt to the first
// agent_message_chunk of the reply: adapter → send → the demo assistant's run → its text
// event → long-poll → chunk, against the in-process server. It reports p50 and p99.
func BenchmarkPromptToFirstChunk(b *testing.B) {
	srv := startServer(b)
	spawn(b, srv, "assistant/bench")
	ed := startAdapter(b, srv, "assistant/bench")
	ed.initialize(b)
	id, s := ed.newSession(b, nil)
	s.nextCommands(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := ed.Prompt(ctxT(b), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("/search release notes")}})
			done <- err
		}()
		select {
		case <-s.chunks:
			lat = append(lat, time.Since(start))
		case err := <-done:
			b.Fatalf("the prompt ended without a chunk: %v", err)
		case <-time.After(waitLimit):
			b.Fatal("no chunk")
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		s.reply()
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
