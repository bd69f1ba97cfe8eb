package rawjson

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitObject(t *testing.T) {
	in := []byte(` { "a" : 1, "b":"x,}\"y" ,"c":{"d":[1,{"e":"]"}]},"k\u00e9y":null, "f":true , "g":-1.5e3 } `)
	require.True(t, json.Valid(in))
	m, err := SplitObject(in)
	require.NoError(t, err)
	require.Equal(t, []Member{
		{"a", []byte("1")},
		{"b", []byte(`"x,}\"y"`)},
		{"c", []byte(`{"d":[1,{"e":"]"}]}`)},
		{"kéy", []byte("null")},
		{"f", []byte("true")},
		{"g", []byte("-1.5e3")},
	}, m)

	m, err = SplitObject([]byte(`{}`))
	require.NoError(t, err)
	require.Empty(t, m)
	_, err = SplitObject([]byte(`[1]`))
	require.ErrorIs(t, err, ErrNotObject)
}

func FuzzSplitObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":"\"}","b":[{},[]]}`, `{"é":{"x":null}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		members, err := SplitObject(data)
		var want map[string]json.RawMessage
		if json.Unmarshal(data, &want) != nil {
			require.Error(t, err) // not an object
			return
		}
		require.NoError(t, err)
		got := map[string]json.RawMessage{}
		for _, m := range members {
			require.True(t, json.Valid(m.Value), "value %q", m.Value)
			got[m.Key] = m.Value
		}
		require.Equal(t, len(want), len(got))
		for k, v := range want {
			require.JSONEq(t, string(v), string(got[k]))
		}
	})
}
