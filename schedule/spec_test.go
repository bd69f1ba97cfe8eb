package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPathMatchesTheRuntime: the cron stream path is the runtime's getCronStreamPath
// (values computed with the runtime's code in Node).
func TestPathMatchesTheRuntime(t *testing.T) {
	s, err := Resolve("0 9 * * *", "Europe/Paris")
	require.NoError(t, err)
	require.Equal(t, "/_cron/eyJleHByZXNzaW9uIjoiMCA5ICogKiAqIiwidGltZXpvbmUiOiJFdXJvcGUvUGFyaXMifQ", s.Path())
	// JSON.stringify leaves <, > and & alone (robfig would refuse this expression, so the
	// spec is built by hand)
	s2 := &Spec{Expression: "0 <9> & * * *", Timezone: "UTC"}
	require.Equal(t, "/_cron/eyJleHByZXNzaW9uIjoiMCA8OT4gJiAqICogKiIsInRpbWV6b25lIjoiVVRDIn0", s2.Path())
	u, err := Resolve("*/5 * * * *", "")
	require.NoError(t, err)
	require.Equal(t, "UTC", u.Timezone)
}

// TestNextInTimeZone: "at nine" is nine in the spec's zone, across a daylight-saving change.
func TestNextInTimeZone(t *testing.T) {
	s, err := Resolve("0 9 * * *", "Europe/Paris")
	require.NoError(t, err)
	winter := s.Next(time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC))
	require.Equal(t, time.Date(2026, 1, 11, 8, 0, 0, 0, time.UTC), winter.UTC())
	summer := s.Next(time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC))
	require.Equal(t, time.Date(2026, 7, 11, 7, 0, 0, 0, time.UTC), summer.UTC())
	// the night of the change (29 March 2026): 09:00 CEST is 07:00 UTC
	dst := s.Next(time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC))
	require.Equal(t, time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC), dst.UTC())
	ny, err := Resolve("30 8 * * 1-5", "America/New_York")
	require.NoError(t, err)
	// Friday 2026-01-09 14:00 UTC → next is Monday 12th 08:30 EST = 13:30 UTC
	require.Equal(t, time.Date(2026, 1, 12, 13, 30, 0, 0, time.UTC), ny.Next(time.Date(2026, 1, 9, 14, 0, 0, 0, time.UTC)).UTC())
	sec, err := Resolve("*/10 * * * * *", "UTC")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC), sec.Next(time.Date(2026, 1, 1, 0, 0, 3, 0, time.UTC)).UTC())
}

func TestResolveRefuses(t *testing.T) {
	for _, c := range []struct{ expr, tz, field string }{
		{"", "UTC", "expression"}, {"every day", "UTC", "expression"}, {"TZ=UTC 0 9 * * *", "UTC", "expression"},
		{"0 9 * * *", "Mars/Olympus", "timezone"}, {"0 9 * * *", "Local", "timezone"}, {"0 9 * * *", "../../etc/passwd", "timezone"},
		{"61 * * * *", "UTC", "expression"},
	} {
		_, err := Resolve(c.expr, c.tz)
		var inv *InvalidError
		require.ErrorAs(t, err, &inv, "%q %q", c.expr, c.tz)
		require.Equal(t, c.field, inv.Field)
	}
}
