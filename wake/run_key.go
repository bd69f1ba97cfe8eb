package wake

import "strconv"

// RunKey is the key of the run (a `run` row, as Electric's runtime writes them) that a
// Go handler's reply to the unit of work at stream position seq belongs to: "run-<seq>".
// Electric's runtime numbers runs run-0, run-1, … from the highest key in the entity's
// state; keying by the wake's position instead needs no read of that state, and still
// never collides with an earlier run of the entity: units are delivered in stream order,
// and one is committed at most once (a failed attempt's writes are dropped). The
// reference's allocator takes the highest number plus one, so its own runs on the same
// stream stay clear of these too.
func RunKey(seq int64) string { return "run-" + strconv.FormatInt(seq, 10) }
