package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHostileScheduleAndObservationInput: hostile or careless requests to the schedule,
// observation and shared-state routes are refused with a 4xx, write nothing (streams,
// delayed sends, cron streams, cron schedules, observations, links) and leave the server
// serving.
func TestHostileScheduleAndObservationInput(t *testing.T) {
	h, _ := hostileSetup(t)
	const sched = entitiesPath + "/notebook/n1/schedules/"
	const cron = "/_electric/observations/cron/ensure-stream"
	const ents = "/_electric/observations/entities/ensure-stream"
	manyTags := map[string]string{}
	for i := range 33 {
		manyTags[fmt.Sprint("k", i)] = "v"
	}
	var tagsJSON []string
	for k, v := range manyTags {
		tagsJSON = append(tagsJSON, fmt.Sprintf("%q:%q", k, v))
	}
	cases := []hostileCase{
		{name: "schedule id too long", method: "PUT", path: sched + strings.Repeat("x", 257), body: `{"scheduleType":"cron","expression":"* * * * *","payload":1}`, status: bad, code: invalid},
		{name: "schedule not an object", method: "PUT", path: sched + "s", body: `[]`, status: bad, code: invalid},
		{name: "schedule not JSON", method: "PUT", path: sched + "s", body: `{"scheduleType":`, status: bad, code: invalid},
		{name: "expression too long", method: "PUT", path: sched + "s", body: `{"scheduleType":"cron","expression":"` + strings.Repeat("*", 300) + `","payload":1}`, status: bad, code: invalid},
		{name: "expression with a NUL", method: "PUT", path: sched + "s", body: `{"scheduleType":"cron","expression":"* * * * *\u0000","payload":1}`, status: bad, code: invalid},
		{name: "timezone escaping the zone files", method: "PUT", path: sched + "s", body: `{"scheduleType":"cron","expression":"* * * * *","timezone":"../../../etc/passwd","payload":1}`, status: bad, code: invalid},
		{name: "timezone too long", method: "PUT", path: sched + "s", body: `{"scheduleType":"cron","expression":"* * * * *","timezone":"` + strings.Repeat("A", 100) + `","payload":1}`, status: bad, code: invalid},
		{name: "debounce not finite", method: "PUT", path: sched + "s", body: `{"scheduleType":"cron","expression":"* * * * *","payload":1,"debounceMs":1e999}`, status: bad, code: invalid},
		{name: "debounce fractional", method: "PUT", path: sched + "s", body: `{"scheduleType":"cron","expression":"* * * * *","payload":1,"timeoutMs":1.5}`, status: bad, code: invalid},
		{name: "fireAt huge", method: "PUT", path: sched + "s", body: `{"scheduleType":"future_send","payload":1,"fireAt":"` + strings.Repeat("9", 5000) + `"}`, status: bad, code: invalid},
		{name: "fireAt far past the year 9999", method: "PUT", path: sched + "s", body: `{"scheduleType":"future_send","payload":1,"fireAt":"99999-01-01T00:00:00Z"}`, status: bad, code: invalid},
		{name: "targetUrl too long", method: "PUT", path: sched + "s", body: `{"scheduleType":"future_send","payload":1,"fireAt":"2026-12-31T00:00:00Z","targetUrl":"/` + strings.Repeat("a", 3000) + `"}`, status: bad, code: invalid},
		{name: "payload invalid for the message type", method: "PUT", path: sched + "s", body: `{"scheduleType":"future_send","payload":{"text":5},"messageType":"note","fireAt":"2026-12-31T00:00:00Z"}`, status: unp, code: schemaFail},
		{name: "body too large", method: "PUT", path: sched + "s", body: `{"scheduleType":"future_send","fireAt":"2026-12-31T00:00:00Z","payload":"` + strings.Repeat("x", 70<<10) + `"}`, status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE"},
		{name: "cron ensure, expression not a string", method: "POST", path: cron, body: `{"expression":["* * * * *"]}`, status: bad, code: invalid},
		{name: "cron ensure, CRON_TZ smuggled", method: "POST", path: cron, body: `{"expression":"CRON_TZ=Asia/Tokyo * * * * *"}`, status: bad, code: invalid},
		{name: "cron ensure, never fires", method: "POST", path: cron, body: `{"expression":"0 0 30 2 *"}`, status: bad, code: invalid},
		{name: "tags: too many", method: "POST", path: ents, body: `{"tags":{` + strings.Join(tagsJSON, ",") + `}}`, status: bad, code: invalid},
		{name: "tags: value too long", method: "POST", path: ents, body: `{"tags":{"k":"` + strings.Repeat("v", 5000) + `"}}`, status: bad, code: invalid},
		{name: "tags: nested", method: "POST", path: ents, body: `{"tags":{"k":{"v":1}}}`, status: bad, code: invalid},
		{name: "tags: control character in a key", method: "POST", path: ents, body: `{"tags":{"k\u0001":"v"}}`, status: bad, code: invalid},
		{name: "shared state for an entity that does not exist", method: "PUT", path: "/_electric/shared-state/x", headers: []string{"Electric-Owner-Entity", "/notebook/none"}, status: nf, code: "NOT_FOUND"},
		{name: "shared state, encoded slash", method: "PUT", path: "/_electric/shared-state/a%2Fb", headers: []string{"Electric-Owner-Entity", "/notebook/n1"}, status: nf, code: "NOT_FOUND"},
		{name: "shared state, no id", method: "PUT", path: "/_electric/shared-state/", headers: []string{"Electric-Owner-Entity", "/notebook/n1"}, status: nf},
	}
	extra := func() string {
		var fp string
		require.NoError(t, h.srv.Pool.QueryRow(context.Background(), `SELECT concat_ws(' | ',
			(SELECT count(*) FROM cron_streams), (SELECT count(*) FROM cron_schedules),
			(SELECT count(*) FROM entity_observations), (SELECT count(*) FROM shared_state_links))`).Scan(&fp))
		return fp
	}
	h.runHostileCases(t, cases, extra, nil)
	requireStatus(t, h.do(http.MethodPut, sched+"ok", `{"scheduleType":"cron","expression":"0 9 * * *","payload":1}`), http.StatusOK)
}
