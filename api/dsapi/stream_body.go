package dsapi

import (
	"bytes"
	"encoding/base64"
	"io"

	"github.com/entityd/entityd/streamdb"
)

// A read's messages go to the client as they are stored. A large body is written message
// by message (small ones gathered into chunks) instead of being joined into one more
// copy of the whole body per reader: 150 readers of one 8 MiB message held 150 copies.
// The messages themselves are often shared — between readers coalesced into one query,
// or taken from the notifier's latest commit — and then cost nothing per reader.

// joinBelow: bodies up to this size are joined and written at once, as before (one small
// allocation and one write are the cheapest for the many small reads).
const joinBelow = 64 << 10

// chunkSize is the buffer that gathers the small messages of a streamed body; messages
// of half of it or more are written as they are.
const chunkSize = 32 << 10

// bodySize is the size of the body renderBody makes of msgs.
func bodySize(m *streamdb.Meta, msgs []streamdb.Message) int {
	n := 0
	for i := range msgs {
		n += len(msgs[i].Data)
	}
	if streamdb.IsJSON(m.ContentType) {
		n += 2 + max(len(msgs)-1, 0) // [ , ]
	}
	return n
}

// writeMessages writes to w the body renderBody makes of msgs, whose size is n.
func writeMessages(w io.Writer, m *streamdb.Meta, msgs []streamdb.Message, n int) error {
	if n <= joinBelow {
		_, err := w.Write(renderBody(m, msgs))
		return err
	}
	c := chunker{w: w, buf: make([]byte, 0, chunkSize)}
	forEachPiece(m, msgs, c.write)
	return c.flush()
}

// forEachPiece calls f with the pieces of the body renderBody makes of msgs, in order.
func forEachPiece(m *streamdb.Meta, msgs []streamdb.Message, f func([]byte)) {
	if !streamdb.IsJSON(m.ContentType) {
		for i := range msgs {
			f(msgs[i].Data)
		}
		return
	}
	f(jsonOpen)
	for i := range msgs {
		if i > 0 {
			f(jsonComma)
		}
		f(msgs[i].Data)
	}
	f(jsonClose)
}

var jsonOpen, jsonComma, jsonClose = []byte("["), []byte(","), []byte("]")

// chunker gathers small writes into its buffer and passes large ones through; the first
// error sticks.
type chunker struct {
	w   io.Writer
	buf []byte
	err error
}

func (c *chunker) write(p []byte) {
	if c.err != nil {
		return
	}
	if len(p) >= chunkSize/2 {
		if c.flush() == nil {
			_, c.err = c.w.Write(p)
		}
		return
	}
	if len(c.buf)+len(p) > cap(c.buf) && c.flush() != nil {
		return
	}
	c.buf = append(c.buf, p...)
}

func (c *chunker) flush() error {
	if c.err == nil && len(c.buf) > 0 {
		_, c.err = c.w.Write(c.buf)
		c.buf = c.buf[:0]
	}
	return c.err
}

// sseDataBound is at most the size of the data event writeSSEMessages renders: base64
// grows binary by a third; text gains "data:", perhaps a space, and a line feed per line
// (lines end at CR, LF or CRLF). Counting the line ends costs one vectorised pass over
// the body, which is cheap next to writing it.
func sseDataBound(m *streamdb.Meta, msgs []streamdb.Message, binary bool) int {
	ends := 0
	if !binary {
		for i := range msgs {
			ends += lineEnds(msgs[i].Data)
		}
	}
	return ssePayloadBound(bodySize(m, msgs), ends, binary)
}

var lf, cr = []byte("\n"), []byte("\r")

// writeSSEMessages renders what writeSSEData renders of renderBody(m, msgs), without
// first joining the messages into one more copy of the body.
func writeSSEMessages(b *bytes.Buffer, m *streamdb.Meta, msgs []streamdb.Message, binary bool) {
	b.WriteString("event: data\n")
	if binary {
		b.WriteString("data:")
		enc := base64.NewEncoder(base64.StdEncoding, b)
		forEachPiece(m, msgs, func(p []byte) { _, _ = enc.Write(p) })
		_ = enc.Close()
		b.WriteString("\n\n")
		return
	}
	l := sseLines{b: b}
	forEachPiece(m, msgs, l.write)
	l.end()
}

// sseLines splits text written in pieces into data lines exactly as writeSSEData splits
// it written at once: a CR at the end of one piece and an LF at the start of the next
// are one line break, and a line that starts with a space keeps it.
type sseLines struct {
	b       *bytes.Buffer
	started bool // "data:" of the current line is written
	afterCR bool // the last byte was a CR that ended a line
}

func (l *sseLines) write(p []byte) {
	for len(p) > 0 {
		if l.afterCR {
			l.afterCR = false
			if p[0] == '\n' {
				p = p[1:]
				continue
			}
		}
		i := bytes.IndexAny(p, "\r\n")
		text := p
		if i >= 0 {
			text = p[:i]
		}
		if len(text) > 0 {
			l.start(text[0])
			l.b.Write(text)
		}
		if i < 0 {
			return
		}
		if !l.started {
			l.b.WriteString("data:")
		}
		l.b.WriteByte('\n')
		l.started = false
		l.afterCR = p[i] == '\r'
		p = p[i+1:]
	}
}

func (l *sseLines) start(first byte) {
	if l.started {
		return
	}
	l.b.WriteString("data:")
	if first == ' ' {
		l.b.WriteByte(' ')
	}
	l.started = true
}

// end ends the last line and the event.
func (l *sseLines) end() {
	if !l.started {
		l.b.WriteString("data:")
	}
	l.b.WriteString("\n\n")
}

// ssePayloadBound is at most the size of the data event of a payload of n bytes with
// the given number of line ends (CR or LF bytes).
func ssePayloadBound(n, lineEnds int, binary bool) int {
	const framing = len("event: data\n") + len("data:") + 2
	if binary {
		return framing + base64.StdEncoding.EncodedLen(n)
	}
	return framing + n + (lineEnds+1)*len("data: \n")
}

// lineEnds counts the CR and LF bytes of p.
func lineEnds(p []byte) int { return bytes.Count(p, lf) + bytes.Count(p, cr) }
