package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSlashCommandOwnerLimits: an owner longer than 256 bytes, a 65th distinct owner and
// odd text in a description are refused with 422 and a detail; nothing is written.
func TestSlashCommandOwnerLimits(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"picker","description":"d"}`)
	h.mustSpawn("picker", "p", nil)
	url := "/picker/p"
	written := func() int64 {
		return h.count(`SELECT count(*) FROM slash_command_layers WHERE entity_url = $1`, url) +
			h.count(`SELECT count(*) FROM slash_commands WHERE entity_url = $1`, url)
	}
	eventsBefore := len(h.events(url))

	r := h.putCmd(url, "review", strings.Repeat("o", 257), `{"description":"d"}`)
	requireValidationFailed(t, r, detail{"/owner", "must be at most 256 bytes"})
	r = h.putCmd(url, "review", "tool", `{"description":"d","version":"`+strings.Repeat("v", 257)+`"}`)
	requireValidationFailed(t, r, detail{"/version", "must be at most 256 bytes"})
	r = h.putCmd(url, "review", "tool", `{"description":"nul \u0000 here"}`)
	requireError(t, r, http.StatusBadRequest, "INVALID_REQUEST", "Request body does not match API schema")
	r = h.putCmd(url, "review", "tool", `{"description":"lone \ud800"}`)
	requireError(t, r, http.StatusBadRequest, "INVALID_REQUEST", "Request body does not match API schema")
	r = h.putCmd(url, "review", "tool", `{"arguments":[{"name":"a","type":"string","description":"bell \u0007"}]}`)
	requireError(t, r, http.StatusBadRequest, "INVALID_REQUEST", "Request body does not match API schema")
	require.Zero(t, written(), "nothing refused is stored")
	require.Len(t, h.events(url), eventsBefore, "nothing refused reaches the stream")

	// 256 bytes is fine; 64 owners are fine, the 65th is refused, an existing owner
	// may still change its layer, and a removed owner frees a place.
	decodeCmdChange(t, h.putCmd(url, "review", strings.Repeat("o", 256), `{"description":"d"}`))
	for i := 1; i < 64; i++ {
		decodeCmdChange(t, h.putCmd(url, fmt.Sprintf("c%d", i%5), fmt.Sprintf("owner-%d", i), `{"description":"d"}`))
	}
	before := written()
	r = h.putCmd(url, "review", "one-too-many", `{"description":"d"}`)
	requireDetails(t, r, http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED", "Too many slash-command owners",
		detail{"/owner", "an entity's slash commands can have at most 64 distinct owners"})
	require.Equal(t, before, written())
	decodeCmdChange(t, h.putCmd(url, "c1", "owner-1", `{"description":"changed"}`))
	decodeCmdChange(t, h.deleteCmd(url, "c2", "owner-2"))
	decodeCmdChange(t, h.putCmd(url, "review", "one-too-many", `{"description":"d"}`))
}

// TestSlashCommandOwnerWriteIsProportional: each new owner's PUT on one command writes
// that owner's layer row and the effective row, whatever the number of owners below it.
// (The layer stack used to be one value rewritten in full: 30 owners with 30 KB names
// made a write 934 KB.) Bytes are measured on the rows the PUT's transaction wrote.
func TestSlashCommandOwnerWriteIsProportional(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"picker","description":"d"}`)
	h.mustSpawn("picker", "p", nil)
	url := "/picker/p"
	owner := func(i int) string { return fmt.Sprintf("%03d-", i) + strings.Repeat("o", 250) }
	var sizes []int64
	for i := 0; i < 40; i++ {
		decodeCmdChange(t, h.putCmd(url, "review", owner(i), `{"description":"`+strings.Repeat("d", 900)+`"}`))
		// the rows written by the PUT's transaction: the effective row and its layers
		sizes = append(sizes, h.count(`WITH w AS (SELECT xmin FROM slash_commands WHERE entity_url = $1 AND name = 'review')
			SELECT (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM slash_commands c, w WHERE c.entity_url = $1 AND c.xmin = w.xmin)
			     + (SELECT coalesce(sum(pg_column_size(l.*)), 0) FROM slash_command_layers l, w WHERE l.entity_url = $1 AND l.xmin = w.xmin)`, url))
		require.EqualValues(t, i+1, h.count(`SELECT count(*) FROM slash_command_layers WHERE entity_url = $1`, url))
	}
	t.Logf("bytes written by PUT 1, 10, 40: %d, %d, %d", sizes[0], sizes[9], sizes[39])
	require.Less(t, sizes[39], sizes[0]*3/2, "the 40th owner's write costs what the first one's did")
	require.Greater(t, sizes[0], int64(1000), "the measure sees the layer row (>= the description)")

	// the stack is intact and in order: the newest owner on top
	rows := h.do(http.MethodGet, entitiesPath+url+"/slash-commands", nil)
	requireStatus(t, rows, http.StatusOK)
	require.Contains(t, string(rows.Body), `"owner":"`+owner(39)+`"`)
	require.Equal(t, 40, strings.Count(string(rows.Body), `"owner":"0`)-1, "40 layers and the top row's owner")
}
