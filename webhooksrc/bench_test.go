package webhooksrc

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkVerifyGitHub is the cost of checking one delivery's signature, by body size.
func BenchmarkVerifyGitHub(b *testing.B) {
	src := &Source{Scheme: SchemeGitHub, Secret: []byte("bench-secret-0123456789")}
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		body := []byte(`{"x":"` + strings.Repeat("x", size-8) + `"}`)
		h := headers("X-Hub-Signature-256", ghSign("bench-secret-0123456789", string(body)), "X-GitHub-Delivery", "d", "X-GitHub-Event", "push")
		b.Run(byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := src.Verify(h, body, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvent is the cost of rendering a verified 4 KiB JSON delivery as its event.
func BenchmarkEvent(b *testing.B) {
	src := &Source{EndpointKey: "gh"}
	body := []byte(`{"x":"` + strings.Repeat("x", 4<<10) + `"}`)
	d := &Received{Delivery: Delivery{ID: "72d3162e-26f9-11ef", EventType: "push"}, Body: body,
		Header: headers("Content-Type", "application/json", "X-GitHub-Delivery", "72d3162e-26f9-11ef"), ReceivedAt: time.Now()}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := src.Event(d); err != nil {
			b.Fatal(err)
		}
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return "1MiB"
	case n >= 64<<10:
		return "64KiB"
	}
	return "1KiB"
}
