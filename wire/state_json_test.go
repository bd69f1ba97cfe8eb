package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStateMarshalsItsCollections(t *testing.T) {
	s := NewState()
	empty, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(empty))

	s.Apply(1, []byte(`{"type":"text","key":"b","value":{"t":"x"},"headers":{"operation":"insert"}}`))
	s.Apply(2, []byte(`{"type":"text","key":"a","value":{"t":"y"},"headers":{"operation":"insert"}}`))
	s.Apply(3, []byte(`{"type":"run","key":"r1","value":{"status":"started"},"headers":{"operation":"insert"}}`))
	s.Apply(4, []byte(`{"type":"run","key":"r1","value":{"status":"done"},"headers":{"operation":"update"}}`))
	s.Apply(5, []byte(`{"type":"text","key":"gone","value":{},"headers":{"operation":"insert"}}`))
	s.Apply(6, []byte(`{"type":"text","key":"gone","headers":{"operation":"delete"}}`))
	got, err := json.Marshal(s)
	require.NoError(t, err)
	// types sorted, keys in first-insert order, updates merged, deletes gone
	require.Equal(t, `{"run":{"r1":{"status":"done"}},"text":{"b":{"t":"x"},"a":{"t":"y"}}}`, string(got))
}
