package streamdb

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want []string
	}{
		{"object", `{"a":1}`, []string{`{"a":1}`}},
		{"scalar", `42`, []string{`42`}},
		{"string", `"x"`, []string{`"x"`}},
		{"null", `null`, []string{`null`}},
		{"surrounding whitespace trimmed", " \n\t{\"a\":1}\r\n ", []string{`{"a":1}`}},
		{"array flattened", `[1,2,3]`, []string{`1`, `2`, `3`}},
		{"array of objects", `[{"a":1},{"b":2}]`, []string{`{"a":1}`, `{"b":2}`}},
		{"one level only", `[[1,2],[3,4]]`, []string{`[1,2]`, `[3,4]`}},
		{"deep nesting", `[[[1]]]`, []string{`[[1]]`}},
		{"whitespace inside elements kept", `[ {"a" : 1,  "b":[ 1 , 2 ]} ,	"x y" , [ ] ]`,
			[]string{`{"a" : 1,  "b":[ 1 , 2 ]}`, `"x y"`, `[ ]`}},
		{"whitespace inside a single value kept", `  {"a" :  [ 1 ]}  `, []string{`{"a" :  [ 1 ]}`}},
		{"escapes kept verbatim", `["\u00e9\n", "é"]`, []string{`"\u00e9\n"`, `"é"`}},
		{"empty array", `[]`, []string{}},
		{"empty array with spaces", ` [ ] `, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitJSON([]byte(tc.body))
			require.NoError(t, err)
			require.Len(t, got, len(tc.want))
			for i := range got {
				require.Equal(t, tc.want[i], string(got[i]))
			}
		})
	}
}

func TestSplitJSONInvalid(t *testing.T) {
	for _, body := range []string{"", "   ", "{", `{"a":}`, "[1,2", "[1,]", "1 2", "[1] [2]", "nul", "{'a':1}", "\xff"} {
		got, err := SplitJSON([]byte(body))
		require.ErrorIs(t, err, ErrInvalidJSON, "%q", body)
		require.Nil(t, got)
	}
}

func TestSplitJSONCopiesElements(t *testing.T) {
	body := []byte(`[{"a":1},2]`)
	got, err := SplitJSON(body)
	require.NoError(t, err)
	for i := range body {
		body[i] = 'x'
	}
	require.Equal(t, `{"a":1}`, string(got[0]), "elements must not alias the request body")
	require.Equal(t, `2`, string(got[1]))
}

func TestJoinJSON(t *testing.T) {
	require.Equal(t, `[]`, string(JoinJSON(nil)))
	require.Equal(t, `[]`, string(JoinJSON([][]byte{})))
	require.Equal(t, `[1]`, string(JoinJSON(msgs(`1`))))
	require.Equal(t, `[{"a" : 1},"x",[1,2]]`, string(JoinJSON(msgs(`{"a" : 1}`, `"x"`, `[1,2]`))))

	// Split then join is an identity on the elements of an array.
	parts, err := SplitJSON([]byte(`[ 1, {"b" :2} ,[3] ]`))
	require.NoError(t, err)
	joined := JoinJSON(parts)
	require.Equal(t, `[1,{"b" :2},[3]]`, string(joined))
	require.True(t, json.Valid(joined))
	again, err := SplitJSON(joined)
	require.NoError(t, err)
	require.Equal(t, parts, again)
}

func TestMediaType(t *testing.T) {
	for in, want := range map[string]string{
		"application/json":                    "application/json",
		"Application/JSON":                    "application/json",
		"application/json; charset=utf-8":     "application/json",
		"  text/plain ;charset=UTF-8 ":        "text/plain",
		"TEXT/Plain":                          "text/plain",
		"application/octet-stream":            "application/octet-stream",
		"text/plain;;":                        "text/plain", // unparseable parameters are dropped too
		"TEXT/Plain;;":                        "text/plain",
		"Application/JSON; charset":           "application/json",
		"text/plain; charset":                 "text/plain",
		"":                                    "",
		"application/vnd.api+json; version=2": "application/vnd.api+json",
	} {
		require.Equal(t, want, MediaType(in), "MediaType(%q)", in)
	}
}

func TestSameContentType(t *testing.T) {
	require.True(t, SameContentType("application/json", "APPLICATION/JSON; charset=utf-8"))
	require.True(t, SameContentType("text/plain;charset=utf-8", "text/plain; charset=iso-8859-1"))
	require.False(t, SameContentType("text/plain", "text/html"))
	require.False(t, SameContentType("application/json", "application/jsonl"))
	require.False(t, SameContentType("application/json", "text/json"))
}

func TestIsJSONIsText(t *testing.T) {
	for _, tc := range []struct {
		ct           string
		json, isText bool
	}{
		{"application/json", true, true},
		{"Application/Json; charset=utf-8", true, true},
		{"text/plain", false, true},
		{"TEXT/HTML; charset=utf-8", false, true},
		{"text/event-stream", false, true},
		{"application/octet-stream", false, false},
		{"application/jsonl", false, false},
		{"application/ndjson", false, false},
		{"image/png", false, false},
		{"", false, false},
	} {
		require.Equal(t, tc.json, IsJSON(tc.ct), "IsJSON(%q)", tc.ct)
		require.Equal(t, tc.isText, IsText(tc.ct), "IsText(%q)", tc.ct)
	}
}
