package dsapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/streamdb"
)

func TestStampOffset(t *testing.T) {
	const off = "0000000000000003_0000000000000120"
	cases := []struct {
		name, in, want string
	}{
		{"change event", `{"type":"text","key":"k","value":{"a":1},"headers":{"operation":"insert"}}`,
			`{"type":"text","key":"k","value":{"a":1},"headers":{"operation":"insert","offset":"` + off + `"}}`},
		{"control message", `{"headers":{"control":"snapshot-start"}}`,
			`{"headers":{"control":"snapshot-start","offset":"` + off + `"}}`},
		{"own bytes kept", "{ \"headers\" : { \"operation\" : \"update\" } , \"value\":\"a\\nb\" }",
			"{ \"headers\" : { \"operation\" : \"update\" ,\"offset\":\"" + off + "\"} , \"value\":\"a\\nb\" }"},
		{"an offset is replaced", `{"headers":{"offset":"mine","operation":"insert","txid":"7"}}`,
			`{"headers":{"offset":"` + off + `","operation":"insert","txid":"7"}}`},
		{"escaped key", `{"head\u0065rs":{"operation":"delete"}}`,
			`{"head\u0065rs":{"operation":"delete","offset":"` + off + `"}}`},
		{"last headers counts", `{"headers":{"x":1},"headers":{"operation":"insert"}}`,
			`{"headers":{"x":1},"headers":{"operation":"insert","offset":"` + off + `"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := stampOffset([]byte(c.in), off)
			require.True(t, ok)
			require.Equal(t, c.want, string(got))
		})
	}
	for _, in := range []string{
		`{"type":"text","value":1}`,                 // no headers
		`{"headers":{"operation":1}}`,               // operation not a string
		`{"headers":{"Content-Type":"text/plain"}}`, // headers, not a State Protocol event
		`{"headers":"operation"}`,                   // headers not an object
		`[{"headers":{"operation":"insert"}}]`,      // not an object
		`"headers"`,
		`{"value":{"headers":{"operation":"insert"}}}`, // nested: only the top level counts
	} {
		_, ok := stampOffset([]byte(in), off)
		require.False(t, ok, in)
	}
}

func TestStampStateOffsetsLeavesSharedMessages(t *testing.T) {
	msgs := []streamdb.Message{
		{Data: []byte(`{"plain":true}`), End: streamdb.Offset{Seq: 1, Pos: 14}},
		{Data: []byte(`{"headers":{"operation":"insert"}}`), End: streamdb.Offset{Seq: 2, Pos: 48}},
	}
	orig := string(msgs[1].Data)
	out := stampStateOffsets(&streamdb.Meta{ContentType: "application/json"}, msgs)
	require.Equal(t, `{"plain":true}`, string(out[0].Data))
	require.Equal(t, `{"headers":{"operation":"insert","offset":"`+msgs[1].End.String()+`"}}`, string(out[1].Data))
	require.Equal(t, orig, string(msgs[1].Data), "the shared messages are not changed")

	text := stampStateOffsets(&streamdb.Meta{ContentType: "text/plain"}, msgs)
	require.Equal(t, orig, string(text[1].Data), "only JSON streams are stamped")
}

// BenchmarkStampOffset: the read-time cost of the stamp on a typical event of an entity's
// stream, and of the test that passes a plain JSON value by.
func BenchmarkStampOffset(b *testing.B) {
	ev := []byte(`{"type":"inbox","key":"msg-001","value":{"from":"/principal/system%3Adev-local","payload":{"text":"hello there, a message of ordinary length"},"timestamp":"2026-01-01T00:00:00.000Z","mode":"immediate","message_type":"text"},"headers":{"operation":"insert","txid":"2f9a0000-0000-0000-0000-000000000000","timestamp":"2026-01-01T00:00:00.000Z"}}`)
	plain := []byte(`{"id":12345,"name":"a plain JSON value of a Durable Streams stream","tags":["a","b","c"],"n":3.5}`)
	const off = "0000000000000003_0000000000000120"
	b.Run("event", func(b *testing.B) {
		b.SetBytes(int64(len(ev)))
		for b.Loop() {
			stampOffset(ev, off)
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			stampOffset(plain, off)
		}
	})
}
