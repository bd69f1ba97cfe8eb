package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigBytesInFlight(t *testing.T) {
	c, err := loadConfig(nil)
	require.NoError(t, err)
	require.EqualValues(t, 256<<20, c.MaxInFlight)
	require.EqualValues(t, 64<<20, c.MaxPrincipalFlight, "a quarter by default")

	c, err = loadConfig([]string{"--max-bytes-in-flight", "1073741824"})
	require.NoError(t, err)
	require.EqualValues(t, 256<<20, c.MaxPrincipalFlight, "the quarter follows the total")

	t.Setenv("ENTITYD_MAX_PRINCIPAL_BYTES_IN_FLIGHT", "33554432")
	c, err = loadConfig(nil)
	require.NoError(t, err)
	require.EqualValues(t, 32<<20, c.MaxPrincipalFlight)

	_, err = loadConfig([]string{"--max-append-bytes", "30000000"})
	require.ErrorContains(t, err, "--max-append-bytes (30000000) needs three times its size per principal in flight",
		"an append that no principal could ever reserve is a configuration error, not a 413 below the limit")
	_, err = loadConfig([]string{"--max-principal-bytes-in-flight", "536870912"})
	require.ErrorContains(t, err, "must be at most --max-bytes-in-flight")
}
