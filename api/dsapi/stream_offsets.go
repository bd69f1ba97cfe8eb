package dsapi

import (
	"bytes"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
)

// State Protocol events are served with their offset. The reference's Durable Streams
// server (@durable-streams/server 0.3.7, formatJsonMessages) gives every value of a JSON
// stream that is an object whose "headers" is an object with a string "operation" (a
// change) or a string "control" (a control message) a headers.offset: the offset after
// the message, the Stream-Next-Offset a read ending there would answer. Electric's
// runtime relies on it: it keeps the events at or after its wake's offset and drops the
// older ones, which without the stamp it would run again. StreamDB takes it as the
// event's cursor.
//
// The stamp is made when a stream is read, never stored: messages stay byte for byte as
// appended, and only the stamped values differ from them. A value's own bytes are kept
// (the reference re-serializes it); an "offset" already in its headers gets the
// server's value, as the reference's {...headers, offset} gives, else the member is
// added last. Other streams, and values that are not State Protocol events, are served
// exactly as stored.

// headersKey is the cheap test that passes every message that may need a stamp: the key
// "headers" as written, or any escape (a key may spell it with one).
var headersKey = []byte(`"headers"`)

// stampStateOffsets returns msgs with the State Protocol events of a JSON stream given
// their headers.offset. msgs may be shared with other readers and is never changed: the
// answer is a copy when anything was stamped.
func stampStateOffsets(m *streamdb.Meta, msgs []streamdb.Message) []streamdb.Message {
	if !streamdb.IsJSON(m.ContentType) {
		return msgs
	}
	var out []streamdb.Message
	for i := range msgs {
		stamped, ok := stampOffset(msgs[i].Data, msgs[i].End.String())
		if !ok {
			continue
		}
		if out == nil {
			out = make([]streamdb.Message, len(msgs))
			copy(out, msgs)
		}
		out[i].Data = stamped
	}
	if out == nil {
		return msgs
	}
	return out
}

// stampOffset returns data (a stored JSON value) with headers.offset set to offset, and
// whether data is a State Protocol event that gets one.
func stampOffset(data []byte, offset string) ([]byte, bool) {
	if !bytes.Contains(data, headersKey) && bytes.IndexByte(data, '\\') < 0 {
		return nil, false
	}
	var buf [16]rawjson.Span // most events have fewer members: no allocation for the spans
	top, _, err := rawjson.ObjectSpans(data, buf[:0])
	if err != nil {
		return nil, false // not an object
	}
	h := lastMember(data, top, "headers") // JSON.parse keeps a repeated key's last value
	if h < 0 || data[top[h].ValueStart] != '{' {
		return nil, false
	}
	hs, hv := top[h].ValueStart, top[h].ValueEnd
	obj := data[hs:hv]
	var hbuf [16]rawjson.Span
	members, closeAt, err := rawjson.ObjectSpans(obj, hbuf[:0])
	if err != nil || !(isString(obj, members, "operation") || isString(obj, members, "control")) {
		return nil, false
	}
	value := rawjson.AppendString(make([]byte, 0, len(offset)+2), offset)
	out := make([]byte, 0, len(data)+len(value)+12)
	at := 0 // data[:at] is in out
	replaced := false
	for _, mb := range members {
		if !rawjson.KeyIs(obj, mb, "offset") {
			continue
		}
		out = append(append(out, data[at:hs+mb.ValueStart]...), value...)
		at, replaced = hs+mb.ValueEnd, true
	}
	if !replaced {
		out = append(out, data[at:hs+closeAt]...)
		if len(members) > 0 {
			out = append(out, ',')
		}
		out = append(append(out, `"offset":`...), value...)
		at = hs + closeAt
	}
	return append(out, data[at:]...), true
}

// lastMember is the index of the last member of obj named key, or -1.
func lastMember(obj []byte, spans []rawjson.Span, key string) int {
	for i := len(spans) - 1; i >= 0; i-- {
		if rawjson.KeyIs(obj, spans[i], key) {
			return i
		}
	}
	return -1
}

// isString reports whether the member named key of the object obj (as its spans) is a
// string.
func isString(obj []byte, spans []rawjson.Span, key string) bool {
	i := lastMember(obj, spans, key)
	return i >= 0 && obj[spans[i].ValueStart] == '"'
}
