package wakereg_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/streamdb"
)

// TestExactlyOnceAcrossReplicasAndRestart: a finished run wakes its parent exactly once
// whichever server process writes it, when two processes hear it, and when the process
// that committed it died before anyone evaluated it (the next server picks it up).
func TestExactlyOnceAcrossReplicasAndRestart(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	tokens := map[string]string{}
	const children = 4

	t.Run("first server", func(t *testing.T) {
		a := client{t: t, base: start(t, testserver.Options{DBURL: dbURL}).URL}
		a.registerType("manager")
		a.registerType("worker")
		a.spawn("/manager/m", "")
		for i := range children {
			url := fmt.Sprintf("/worker/c%d", i)
			tokens[url] = a.spawn(url, `"parent":"/manager/m","wake":{"subscriberUrl":"/manager/m","condition":"runFinished"}`)
		}
		a.finishRun("/worker/c0", tokens["/worker/c0"], "before", "one")
		a.waitWakes("/manager/m", 1)
	})

	// a process commits a child's finished run and dies before evaluating it: a bare
	// store (no wake evaluation at all) writes it and is closed
	func() {
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, dbURL)
		require.NoError(t, err)
		defer pool.Close()
		store, err := streamdb.Open(ctx, pool, streamdb.Options{})
		require.NoError(t, err)
		defer store.Close()
		_, err = store.Append(ctx, &streamdb.AppendRequest{Path: "/worker/c1/main", ContentType: "application/json",
			Messages: [][]byte{[]byte(runEvent("orphaned", "insert", "started")), []byte(textDelta("orphaned", "0", "left behind")),
				[]byte(runEvent("orphaned", "update", "completed"))}})
		require.NoError(t, err)
	}()

	b := client{t: t, base: start(t, testserver.Options{DBURL: dbURL}).URL}
	c := client{t: t, base: start(t, testserver.Options{DBURL: dbURL}).URL}
	w := b.waitWakes("/manager/m", 2)
	require.Equal(t, "left behind", *value(t, w[1]).FinishedChild.Response, "the orphaned run was evaluated after the restart")

	// runs finished through both replicas, each heard by both
	const runs = 24
	for i := range runs {
		writer := []client{b, c}[i%2]
		url := fmt.Sprintf("/worker/c%d", 1+i%(children-1))
		writer.finishRun(url, tokens[url], fmt.Sprintf("run-%d", i), fmt.Sprint(i))
	}
	w = c.waitWakes("/manager/m", 2+runs)
	// one more, last: once its wake is there, every earlier run has been evaluated
	b.finishRun("/worker/c0", tokens["/worker/c0"], "last", "end")
	w = c.waitWakes("/manager/m", 3+runs)
	require.Len(t, w, 3+runs, "exactly one wake per finished run")
	seen := map[string]int{}
	for _, e := range w {
		v := value(t, e)
		seen[v.FinishedChild.URL+" "+*v.FinishedChild.Response]++
	}
	require.Len(t, seen, 3+runs)
	require.Equal(t, 1, seen["/worker/c0 end"])
}
