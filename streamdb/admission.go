package streamdb

// Admission is a caller's check that runs inside the append transaction, after the target
// streams are locked, so that its verdict and the append commit together. Requests that
// share an Admission are checked by one query.
//
// SQL receives, in request order, the subjects' keys as $1 (text[]), their holders as
// $2 (text[]) and their epochs as $3 (bigint[]), and returns one (key, code) row per
// subject that needs attention; Judge turns a code into the verdict. The SQL may lock
// rows of the caller's tables (FOR UPDATE, in a fixed order) to make its verdict hold
// until commit.
type Admission struct {
	SQL   string
	Judge func(code string) Verdict
}

// Subject is what an append asks its Admission about: the caller's row (an entity URL,
// say; the stream path when empty) and, for fenced writes, the claim the writer holds.
type Subject struct {
	Key    string
	Holder string
	Epoch  int64
}

// VerdictKind is what an Admission decided about one request.
type VerdictKind uint8

const (
	// Admit writes the append; the verdict's Note is handed back (AppendResult.Note) and
	// to the request's OnAdmit.
	Admit VerdictKind = iota
	// Refuse fails the request alone with a *RefusedError wrapping the verdict's Err.
	Refuse
	// Divert writes nothing and answers AppendResult.Diverted: the request needs more
	// than the group commit does (the caller takes its own transaction, WithTx).
	Divert
)

// Verdict is an Admission's answer for one request.
type Verdict struct {
	Kind VerdictKind
	Note string // for Admit
	Err  error  // for Refuse
}

// Admitted admits a request with a note.
func Admitted(note string) Verdict { return Verdict{Kind: Admit, Note: note} }

// Refused refuses a request with err.
func Refused(err error) Verdict { return Verdict{Kind: Refuse, Err: err} }

// Diverted sends a request to the caller's own transaction.
func Diverted() Verdict { return Verdict{Kind: Divert} }

// subjectKey is the key a request's Admission checks.
func (r *AppendRequest) subjectKey() string {
	if r.Subject.Key != "" {
		return r.Subject.Key
	}
	return r.Path
}
