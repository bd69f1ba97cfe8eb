package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The webhook delivery budgets: defaults, environment, and flags over the environment.
func TestWebhookDeliverySettings(t *testing.T) {
	c, err := loadConfig(nil)
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, c.WebhookTimeout)
	require.Equal(t, [3]int{64, 8, 1024}, [3]int{c.WebhookMax, c.WebhookPerTarget, c.WebhookQueued})

	t.Setenv("ENTITYD_WEBHOOK_TIMEOUT", "3s")
	t.Setenv("ENTITYD_WEBHOOK_MAX_DELIVERIES", "128")
	t.Setenv("ENTITYD_WEBHOOK_MAX_PER_TARGET", "4")
	t.Setenv("ENTITYD_WEBHOOK_MAX_QUEUED_PER_TARGET", "50")
	c, err = loadConfig([]string{"--webhook-max-per-target", "16"})
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, c.WebhookTimeout)
	require.Equal(t, [3]int{128, 16, 50}, [3]int{c.WebhookMax, c.WebhookPerTarget, c.WebhookQueued})

	_, err = loadConfig([]string{"--webhook-max-per-target", "0"})
	require.ErrorContains(t, err, "--webhook-max-per-target")
	t.Setenv("ENTITYD_WEBHOOK_TIMEOUT", "soon")
	_, err = loadConfig(nil)
	require.ErrorContains(t, err, "ENTITYD_WEBHOOK_TIMEOUT must be a positive duration")
}

// The pgSync allow-list: off by default; tables read from the flag; entityd's own tables
// refuse to start.
func TestPgSyncSettings(t *testing.T) {
	c, err := loadConfig(nil)
	require.NoError(t, err)
	require.Empty(t, c.PgSyncTables)
	require.Equal(t, 10*time.Minute, c.PgSyncSlotIdle)
	t.Setenv("ENTITYD_PG_SYNC_TABLES", "public.orders, app.items")
	c, err = loadConfig([]string{"--pg-sync-slot-idle", "1m"})
	require.NoError(t, err)
	require.Equal(t, "public.orders, app.items", c.PgSyncTables)
	require.Equal(t, time.Minute, c.PgSyncSlotIdle)
	_, err = loadConfig([]string{"--pg-sync-tables", "public.entities"})
	require.ErrorContains(t, err, "entityd's own tables")
	_, err = loadConfig([]string{"--pg-sync-tables", `"x"`})
	require.ErrorContains(t, err, "--pg-sync-tables")
}
