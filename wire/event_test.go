package wire

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkEventMarshal: an inbox event embedding a 300-byte payload is built in one
// allocation (the result) plus the headers object.
func BenchmarkEventMarshal(b *testing.B) {
	value := []byte(`{"from":"/principal/user%3Aalice","payload":{"source":"` + strings.Repeat("x", 300) +
		`"},"timestamp":"2026-11-25T14:00:00.000Z","mode":"immediate","status":"processed"}`)
	e := Event{Type: "inbox", Key: "msg-in-1795614000000-abc123", Value: value, Operation: OpInsert,
		Txid: "6de01434-89b9-48fe-a60a-9d9d1286591a", Timestamp: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		_ = e.Marshal()
	}
}
