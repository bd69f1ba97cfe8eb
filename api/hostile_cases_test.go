package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// runHostileCases runs each case as a subtest, as the feature suites (schedules,
// attachments, webhook sources, pgSync) do: the case's status and error code, and nothing
// written — neither what the harness fingerprints nor what extra counts of the feature's
// own state (nil: nothing more). each, when not nil, asserts more of every answer.
func (h *harness) runHostileCases(t *testing.T, cases []hostileCase, extra func() string, each func(t *testing.T, r *response)) {
	t.Helper()
	if extra == nil {
		extra = func() string { return "" }
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, beforeExtra := h.fingerprint(), extra()
			r := h.hostile(t, tc)
			require.Equal(t, tc.status, r.Status, "body: %s", r.Body)
			if tc.code != "" {
				require.Contains(t, string(r.Body), `"code":"`+tc.code+`"`)
			}
			if each != nil {
				each(t, r)
			}
			require.Equal(t, before, h.fingerprint(), "nothing is written")
			require.Equal(t, beforeExtra, extra(), "nothing of the feature's own state is written")
		})
	}
}
