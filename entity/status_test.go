package entity_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/entity"
)

// TestStatusMachine: every status × signal, with and without a Go handler, against the
// table of the spec (paused ignores all but kill, term and cont; SIGTERM finishes through
// stopping when a handler runs the entity; handler-only signals change nothing).
func TestStatusMachine(t *testing.T) {
	type want struct {
		next    entity.Status
		handled bool
	}
	S := func(s entity.Status, h bool) want { return want{s, h} }
	const (
		run, idle, paused, stopping = entity.StatusRunning, entity.StatusIdle, entity.StatusPaused, entity.StatusStopping
		stopped, killed             = entity.StatusStopped, entity.StatusKilled
	)
	cases := []struct {
		from        entity.Status
		signal      string
		withHandler bool
		want        want
	}{
		{idle, entity.SIGKILL, false, S(killed, true)},
		{paused, entity.SIGKILL, false, S(killed, true)},
		{idle, entity.SIGTERM, false, S(stopped, true)},
		{idle, entity.SIGTERM, true, S(stopping, true)},
		{run, entity.SIGTERM, false, S(stopping, true)},
		{stopping, entity.SIGTERM, false, S(stopping, true)},
		{paused, entity.SIGTERM, true, S(stopped, true)},
		{idle, entity.SIGSTOP, false, S(paused, true)},
		{run, entity.SIGSTOP, false, S(paused, true)},
		{stopping, entity.SIGSTOP, false, S(stopping, false)},
		{paused, entity.SIGCONT, false, S(idle, true)},
		{idle, entity.SIGCONT, false, S(idle, false)},
		{paused, entity.SIGUSR, false, S(paused, false)},
		{idle, entity.SIGUSR, true, S(idle, false)},
		{idle, entity.SIGINT, false, S(idle, false)},
		{idle, entity.SIGHUP, false, S(idle, false)},
	}
	for _, c := range cases {
		next, handled := c.from.Next(c.signal, c.withHandler)
		require.Equal(t, c.want, want{next, handled}, "%s + %s (handler %v)", c.from, c.signal, c.withHandler)
	}

	for _, s := range entity.Statuses {
		require.True(t, s.Valid())
		require.Equal(t, s == stopped || s == killed, s.Terminal(), s)
		require.Equal(t, s != stopping && !s.Terminal(), s.AcceptsWrites(), s)
		require.Equal(t, s != paused && !s.Terminal(), s.Deliverable(), s)
	}
	require.False(t, entity.Status("sleeping").Valid())
	require.ElementsMatch(t, []string{"paused", "stopped", "killed"}, entity.Undeliverable())
	require.ElementsMatch(t, []string{"stopped", "killed"}, entity.Ended())
	require.ElementsMatch(t, []string{"stopping", "stopped", "killed"}, entity.NotAcceptingWrites())
}
