package dsapi

import (
	"bytes"
	"encoding/base64"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
)

// writeSSEData renders one data event. Text is split into data lines on CR, LF and CRLF,
// so bytes in the payload can never end the event early; binary is one base64 line.
func writeSSEData(b *bytes.Buffer, payload []byte, binary bool) {
	b.WriteString("event: data\n")
	if binary {
		b.WriteString("data:")
		enc := base64.NewEncoder(base64.StdEncoding, b)
		_, _ = enc.Write(payload)
		_ = enc.Close()
		b.WriteString("\n\n")
		return
	}
	for {
		i := bytes.IndexAny(payload, "\r\n")
		line := payload
		if i >= 0 {
			line = payload[:i]
		}
		writeDataLine(b, line)
		if i < 0 {
			break
		}
		if payload[i] == '\r' && i+1 < len(payload) && payload[i+1] == '\n' {
			i++
		}
		payload = payload[i+1:]
	}
	b.WriteByte('\n')
}

// writeSSEControl renders a control event: the next offset, the cursor (while the stream
// is open) and whether the reader is up to date or the stream is closed.
func writeSSEControl(b *bytes.Buffer, next streamdb.Offset, cursor string, upToDate, closed bool) {
	var o rawjson.Object
	o.String("streamNextOffset", next.String())
	if !closed {
		o.String("streamCursor", cursor)
	}
	if upToDate || closed {
		o.Bool("upToDate", true)
	}
	if closed {
		o.Bool("streamClosed", true)
	}
	b.WriteString("event: control\n")
	writeDataLine(b, o.Bytes())
	b.WriteByte('\n')
}

// writeDataLine renders "data:<line>". SSE parsers drop one space after the colon, so a
// line that itself starts with a space gets an extra one to keep its own.
func writeDataLine(b *bytes.Buffer, line []byte) {
	b.WriteString("data:")
	if len(line) > 0 && line[0] == ' ' {
		b.WriteByte(' ')
	}
	b.Write(line)
	b.WriteByte('\n')
}

const sseKeepAliveComment = ": keep-alive\n\n"
