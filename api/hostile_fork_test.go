package api_test

import (
	"net/http"
	"strings"
)

// hostileForkCases are the hostile inputs of POST .../fork (issue 29): each is refused
// before anything is copied.
func hostileForkCases(ent string) []hostileCase {
	fork := ent + "/fork"
	c := func(name, body string, status int, code string) hostileCase {
		return hostileCase{name: "fork: " + name, method: "POST", path: fork, body: body, status: status, code: code}
	}
	return []hostileCase{
		c("malformed JSON", `{"instance_id":`, bad, invalid),
		c("array body", `[]`, bad, invalid),
		c("instance_id with a slash", `{"instance_id":"a/b"}`, bad, invalid),
		c("instance_id empty", `{"instance_id":""}`, bad, invalid),
		c("instance_id dot-dot", `{"instance_id":".."}`, bad, invalid),
		c("instance_id too long", `{"instance_id":"`+strings.Repeat("a", 257)+`"}`, bad, invalid),
		c("instance_id control", `{"instance_id":"a\u0000b"}`, bad, invalid),
		c("instance_id number", `{"instance_id":7}`, bad, invalid),
		c("instance_id taken", `{"instance_id":"n1"}`, conf, "DUPLICATE_URL"),
		c("waitTimeoutMs negative", `{"waitTimeoutMs":-1}`, bad, invalid),
		c("waitTimeoutMs past the bound", `{"waitTimeoutMs":120001}`, bad, invalid),
		c("waitTimeoutMs huge", `{"waitTimeoutMs":1e308}`, bad, invalid),
		c("waitTimeoutMs string", `{"waitTimeoutMs":"5"}`, bad, invalid),
		c("fork_pointer null", `{"fork_pointer":null}`, bad, invalid),
		c("fork_pointer array", `{"fork_pointer":[]}`, bad, invalid),
		c("fork_pointer no sub_offset", `{"fork_pointer":{"offset":null}}`, bad, invalid),
		c("fork_pointer sub_offset zero", `{"fork_pointer":{"offset":null,"sub_offset":0}}`, bad, invalid),
		c("fork_pointer sub_offset fraction", `{"fork_pointer":{"offset":null,"sub_offset":1.5}}`, bad, invalid),
		c("fork_pointer sub_offset huge", `{"fork_pointer":{"offset":null,"sub_offset":1e300}}`, bad, invalid),
		c("fork_pointer sub_offset past the stream", `{"fork_pointer":{"offset":null,"sub_offset":99999}}`, bad, invalid),
		c("fork_pointer offset number", `{"fork_pointer":{"offset":5,"sub_offset":1}}`, bad, invalid),
		c("fork_pointer offset garbage", `{"fork_pointer":{"offset":"zz","sub_offset":1}}`, bad, invalid),
		c("fork_pointer offset sentinel", `{"fork_pointer":{"offset":"now","sub_offset":1}}`, bad, invalid),
		c("fork_pointer offset too long", `{"fork_pointer":{"offset":"`+strings.Repeat("0", 65)+`","sub_offset":1}}`, bad, invalid),
		c("fork_pointer offset past the tail", `{"fork_pointer":{"offset":"0000000000009999_0000000000000000","sub_offset":1}}`, bad, invalid),
		c("fork_pointer offset not an event's end", `{"fork_pointer":{"offset":"0000000000000001_0000000000000001","sub_offset":1}}`, bad, invalid),
		c("anchor unknown", `{"anchor":"latest"}`, bad, invalid),
		c("anchor without a completed run", `{"anchor":"latest_completed_run"}`, bad, invalid),
		c("anchor and pointer", `{"anchor":"latest_completed_run","fork_pointer":{"offset":null,"sub_offset":1}}`, bad, invalid),
		c("tags not strings", `{"tags":{"a":1}}`, bad, invalid),
		c("tags not an object", `{"tags":"a"}`, bad, invalid),
		c("parent missing", `{"parent":"/notebook/ghost"}`, nf, "NOT_FOUND"),
		c("parent too long", `{"parent":"/notebook/`+strings.Repeat("p", 3000)+`"}`, bad, invalid),
		c("wake without parent", `{"wake":{"subscriberUrl":"/notebook/n1","condition":"runFinished"}}`, bad, invalid),
		c("wake to another subscriber", `{"parent":"/notebook/n1","wake":{"subscriberUrl":"/notebook/x","condition":"runFinished"}}`,
			http.StatusUnauthorized, "UNAUTHORIZED"),
		c("wake malformed", `{"parent":"/notebook/n1","wake":{"condition":"runFinished"}}`, bad, invalid),
		{name: "fork: principal entity", method: "POST", path: "/_electric/entities/principal/system:dev-local/fork", body: `{}`, status: bad, code: invalid},
		{name: "fork: unknown entity", method: "POST", path: "/_electric/entities/notebook/ghost/fork", body: `{}`, status: nf, code: "NOT_FOUND"},
		{name: "fork: unknown type", method: "POST", path: "/_electric/entities/ghost/g/fork", body: `{}`, status: nf, code: "UNKNOWN_ENTITY_TYPE"},
	}
}
