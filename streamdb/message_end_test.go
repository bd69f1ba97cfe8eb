package streamdb

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// MessageEnd gives, for every message, the offset Read reports after it, also for a fork's
// inherited messages, so "the last n" can be read from there.
func TestMessageEndIsWhereReadResumes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	create(t, s, "/oa", CreateConfig{ContentType: "text/plain"}, "ab", "cde", "f")
	fork(t, s, "/oa-fork", "/oa", ptr(off(2, 5)), 0)
	appendMsgs(t, s, "/oa-fork", "GHIJ", "K")

	for _, path := range []string{"/oa", "/oa-fork"} {
		m, err := s.Lookup(testCtx(t), path)
		require.NoError(t, err)
		all := readAll(t, s, path)
		for i, msg := range all {
			got, err := s.MessageEnd(testCtx(t), m, int64(i+1))
			require.NoError(t, err)
			require.Equal(t, msg.End, got, "%s message %d", path, i+1)
		}
		start, err := s.MessageEnd(testCtx(t), m, 0)
		require.NoError(t, err)
		require.Equal(t, Start, start)
		past, err := s.MessageEnd(testCtx(t), m, m.Tail.Seq+5)
		require.NoError(t, err)
		require.Equal(t, m.Tail, past)
	}

	m, err := s.Lookup(testCtx(t), "/oa-fork")
	require.NoError(t, err)
	from, err := s.MessageEnd(testCtx(t), m, m.Tail.Seq-2)
	require.NoError(t, err)
	require.Equal(t, []string{"GHIJ", "K"}, datas(readFrom(t, s, "/oa-fork", from)), "the last two messages")
}
