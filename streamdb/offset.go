package streamdb

import (
	"errors"
	"fmt"
	"strconv"
)

// Offset is a position in a stream: after the message numbered Seq, whose last byte
// ends at byte position Pos. The zero Offset is the start of every stream.
type Offset struct {
	Seq int64
	Pos int64
}

// Start is the offset before the first message.
var Start = Offset{}

const offsetDigits = 16

// String renders the wire form, e.g. 0000000000000003_0000000000000042. Both parts are
// fixed-width so that offsets sort lexicographically in stream order.
func (o Offset) String() string {
	return fmt.Sprintf("%016d_%016d", o.Seq, o.Pos)
}

// Less reports whether o comes before p.
func (o Offset) Less(p Offset) bool { return o.Seq < p.Seq }

// ErrBadOffset reports an offset that is not of the form digits_digits.
var ErrBadOffset = errors.New("malformed offset")

// OffsetKind tells a concrete offset from the protocol's sentinels.
type OffsetKind int

const (
	OffsetConcrete  OffsetKind = iota
	OffsetBeginning            // "-1": the start of the stream
	OffsetNow                  // "now": the current tail
)

// ParseOffset parses a client-supplied offset. It accepts the sentinels "-1" and "now"
// and otherwise only digits_digits, so separators a URL or a header could smuggle in
// (",", "&", "/", spaces, NUL, CR/LF) are refused.
func ParseOffset(s string) (Offset, OffsetKind, error) {
	switch s {
	case "-1":
		return Start, OffsetBeginning, nil
	case "now":
		return Offset{}, OffsetNow, nil
	}
	us := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			if us >= 0 {
				return Offset{}, 0, ErrBadOffset
			}
			us = i
			continue
		}
		if c < '0' || c > '9' {
			return Offset{}, 0, ErrBadOffset
		}
	}
	if us <= 0 || us == len(s)-1 || len(s) > 2*offsetDigits+1+8 {
		return Offset{}, 0, ErrBadOffset
	}
	seq, err1 := strconv.ParseInt(s[:us], 10, 64)
	pos, err2 := strconv.ParseInt(s[us+1:], 10, 64)
	if err1 != nil || err2 != nil {
		return Offset{}, 0, ErrBadOffset
	}
	return Offset{Seq: seq, Pos: pos}, OffsetConcrete, nil
}
