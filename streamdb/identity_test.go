package streamdb

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIdentityRecordsAccessAndAStaleOneIsRefused: a stream's identity carries the
// access it was created with; an append that names an identity the path no longer has
// (the stream deleted and created again behind this process's back, so its cache is
// stale) is refused with ErrStreamReplaced and writes nothing, and Forget makes the
// next Identify read the new stream.
func TestIdentityRecordsAccessAndAStaleOneIsRefused(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	m := create(t, s, "/owned", CreateConfig{ContentType: "application/json", Access: Access{Kind: AccessPlain, Owner: "user:alice"}})
	id, err := s.Identify(ctx, "/owned")
	require.NoError(t, err)
	require.Equal(t, Identity{ID: m.ID, Access: Access{Kind: AccessPlain, Owner: "user:alice"}}, id)
	require.Equal(t, id, IdentityOf(lookup(t, s, "/owned")))

	// another process deletes it and bob creates a stream at the path: no notification
	// reaches this store, so its cache still names alice's stream
	_, err = s.pool.Exec(ctx, `DELETE FROM streams WHERE id = $1`, m.ID)
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, `INSERT INTO streams (path, content_type, access_kind, owner_principal)
		VALUES ('/owned', 'application/json', 'plain', 'user:bob')`)
	require.NoError(t, err)
	stale, err := s.Identify(ctx, "/owned")
	require.NoError(t, err)
	require.Equal(t, id, stale, "the cache does not know")

	_, err = s.Append(ctx, &AppendRequest{Path: "/owned", StreamID: stale.ID, Messages: msgs(`{"by":"alice"}`)})
	require.ErrorIs(t, err, ErrStreamReplaced)
	require.Empty(t, readAll(t, s, "/owned"), "nothing written into bob's stream")

	s.Forget("/owned")
	fresh, err := s.Identify(ctx, "/owned")
	require.NoError(t, err)
	require.NotEqual(t, id.ID, fresh.ID)
	require.Equal(t, Access{Kind: AccessPlain, Owner: "user:bob"}, fresh.Access)

	// a delete through this store drops its entry at once
	require.NoError(t, s.Delete(ctx, "/owned", nil))
	_, err = s.Identify(ctx, "/owned")
	require.ErrorIs(t, err, ErrNotFound)
}
