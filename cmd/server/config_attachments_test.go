package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The attachment limit and quotas: Electric's default and its variable, ours over it,
// the flag over both; 0 turns a quota off.
func TestAttachmentSettings(t *testing.T) {
	c, err := loadConfig(nil)
	require.NoError(t, err)
	require.Equal(t, int64(25<<20), c.MaxAttachmentBytes)
	require.Equal(t, 10_000, c.quotas().Attachments)
	require.Equal(t, 1<<30, c.quotas().AttachmentBytes)

	t.Setenv("ELECTRIC_AGENTS_MAX_ATTACHMENT_BYTES", "1000")
	c, err = loadConfig(nil)
	require.NoError(t, err)
	require.Equal(t, int64(1000), c.MaxAttachmentBytes)
	t.Setenv("ENTITYD_MAX_ATTACHMENT_BYTES", "2000")
	c, err = loadConfig(nil)
	require.NoError(t, err)
	require.Equal(t, int64(2000), c.MaxAttachmentBytes)
	c, err = loadConfig([]string{"--max-attachment-bytes", "3000", "--quota-attachments", "0", "--quota-attachment-bytes", "5"})
	require.NoError(t, err)
	require.Equal(t, int64(3000), c.MaxAttachmentBytes)
	require.Equal(t, -1, c.quotas().Attachments)
	require.Equal(t, 5, c.quotas().AttachmentBytes)

	t.Setenv("ENTITYD_MAX_ATTACHMENT_BYTES", "lots")
	_, err = loadConfig(nil)
	require.ErrorContains(t, err, "ENTITYD_MAX_ATTACHMENT_BYTES must be a positive integer")
}
