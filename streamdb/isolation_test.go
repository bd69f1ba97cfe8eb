package streamdb

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/dberr"
	"github.com/entityd/entityd/internal/metrics"
)

// A request the database refuses fails alone: the good appends group-committed with it
// still commit, in order. The poison here is a dedupe key holding a NUL byte, which the
// text column refuses (the HTTP layer refuses it at the door; the store must not rely on
// that).
func TestRefusedAppendFailsAlone(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{Lanes: 1}) // one lane: everything shares transactions
	ctx := testCtx(t)
	const good, poisoned, perSender = 12, 6, 40
	for i := range good {
		create(t, s, "/good/"+strconv.Itoa(i), CreateConfig{ContentType: "text/plain"})
	}
	create(t, s, "/poison", CreateConfig{ContentType: "text/plain"})
	splitsBefore := testutil.ToFloat64(metrics.CommitSplits)

	var wg sync.WaitGroup
	goodErrs := make(chan error, good*perSender)
	poisonErrs := make(chan error, poisoned*perSender)
	for i := range good {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perSender {
				_, err := s.Append(ctx, &AppendRequest{Path: "/good/" + strconv.Itoa(i), Messages: msgs(strconv.Itoa(n)),
					Dedupe: &Dedupe{Key: fmt.Sprintf("k-%d", n), Hash: []byte{1}, Ref: "r"}})
				if err != nil {
					goodErrs <- err
				}
			}
		}()
	}
	for i := range poisoned {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perSender {
				_, err := s.Append(ctx, &AppendRequest{Path: "/poison", Messages: msgs("x"),
					Dedupe: &Dedupe{Key: fmt.Sprintf("bad-%d-%d\x00", i, n), Hash: []byte{1}, Ref: "r"}})
				poisonErrs <- err
			}
		}()
	}
	wg.Wait()
	close(goodErrs)
	close(poisonErrs)
	for err := range goodErrs {
		require.NoError(t, err, "a good append failed beside a poisoned one")
	}
	for err := range poisonErrs {
		require.Error(t, err)
		require.True(t, dberr.Refused(err), "want a refusal by the database, got %v", err)
	}
	for i := range good {
		got := datas(readAll(t, s, "/good/"+strconv.Itoa(i)))
		require.Len(t, got, perSender)
		for n, d := range got {
			require.Equal(t, strconv.Itoa(n), d, "stream order kept")
		}
	}
	require.Empty(t, readAll(t, s, "/poison"), "nothing of a refused append is written")
	require.Greater(t, testutil.ToFloat64(metrics.CommitSplits), splitsBefore, "the poison shared a transaction at least once")
}

// A caller's statement that fails (the wake acknowledgements ride along appends with
// Also) fails its own request only.
func TestFailingStatementFailsAlone(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{Lanes: 1})
	ctx := testCtx(t)
	create(t, s, "/a", CreateConfig{ContentType: "text/plain"})
	create(t, s, "/b", CreateConfig{ContentType: "text/plain"})

	var wg sync.WaitGroup
	errs := make([]error, 64)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &AppendRequest{Path: "/a", Messages: msgs(strconv.Itoa(i))}
			if i%8 == 0 {
				req = &AppendRequest{Path: "/b", Messages: msgs("x"), Also: []Statement{{SQL: `SELECT 1 / 0`}}}
			}
			_, errs[i] = s.Append(ctx, req)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i%8 == 0 {
			require.Error(t, err)
			require.Equal(t, "22012", dberr.Code(err)) // division_by_zero
			continue
		}
		require.NoError(t, err)
	}
	require.Len(t, readAll(t, s, "/a"), 56)
	require.Empty(t, readAll(t, s, "/b"))
}
