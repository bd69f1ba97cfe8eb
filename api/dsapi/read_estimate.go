package dsapi

import "github.com/entityd/entityd/streamdb"

// readEstimate is what reading (from, tail] will hold before it is read: the bytes
// between the offsets, at most a read's cap — unless the range is one message, which a
// read returns whatever its size. A larger first message is settled after the read.
func (s *Server) readEstimate(from, tail streamdb.Offset) int64 {
	n := max(tail.Pos-from.Pos, 0)
	if tail.Seq-from.Seq == 1 {
		return n
	}
	return min(n, int64(s.streams.MaxReadBytes()))
}
