package api

// BytesInFlight is the bytes requests hold now (for tests; the gauge
// entityd_bytes_in_flight reports it).
func (s *Server) BytesInFlight() int64 { return s.budget.InFlight() }
