package dsapi

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/streamdb"
)

// writeSSEMessages renders exactly what writeSSEData renders of the joined body, within
// the bound that is reserved for it, wherever the line breaks fall between messages.
func TestWriteSSEMessagesMatchesJoined(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \r\n")
	for _, ct := range []string{"application/json", "text/plain", "application/octet-stream"} {
		m := &streamdb.Meta{ContentType: ct}
		binary := !streamdb.IsText(ct)
		for range 2000 {
			msgs := make([]streamdb.Message, rng.IntN(4))
			for i := range msgs {
				data := make([]byte, rng.IntN(6))
				for j := range data {
					data[j] = alphabet[rng.IntN(len(alphabet))]
				}
				msgs[i].Data = data
			}
			var want, got bytes.Buffer
			writeSSEData(&want, renderBody(m, msgs), binary)
			writeSSEMessages(&got, m, msgs, binary)
			require.Equal(t, want.String(), got.String(), "%s %q", ct, msgs)
			require.LessOrEqual(t, got.Len(), sseDataBound(m, msgs, binary))
			require.Equal(t, len(renderBody(m, msgs)), bodySize(m, msgs))
		}
	}
}

// writeMessages streams a large body exactly as renderBody renders it.
func TestWriteMessagesMatchesJoined(t *testing.T) {
	for _, ct := range []string{"application/json", "application/octet-stream"} {
		m := &streamdb.Meta{ContentType: ct}
		var msgs []streamdb.Message
		for i := range 400 {
			msgs = append(msgs, streamdb.Message{Data: bytes.Repeat([]byte{'1' + byte(i%9)}, 1+i*i%40000)})
		}
		var got bytes.Buffer
		n := bodySize(m, msgs)
		require.Greater(t, n, joinBelow)
		require.NoError(t, writeMessages(&got, m, msgs, n))
		require.Equal(t, renderBody(m, msgs), got.Bytes())
	}
}

// A 1 MiB page of 100-byte JSON messages: streamed through the chunker versus joined
// first (what every catch-up read of a busy stream does).
func BenchmarkCatchUpBody(b *testing.B) {
	m := &streamdb.Meta{ContentType: "application/json"}
	msgs := make([]streamdb.Message, 10_000)
	for i := range msgs {
		msgs[i].Data = bytes.Repeat([]byte("x"), 100)
	}
	n := bodySize(m, msgs)
	b.Run("streamed", func(b *testing.B) {
		b.SetBytes(int64(n))
		for b.Loop() {
			_ = writeMessages(io.Discard, m, msgs, n)
		}
	})
	b.Run("joined", func(b *testing.B) {
		b.SetBytes(int64(n))
		for b.Loop() {
			_, _ = io.Discard.Write(renderBody(m, msgs))
		}
	})
}
