package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Dev mode trusts a header, so it refuses to listen where others can reach it unless
// told explicitly; jwt mode needs its keys. Each refusal is one line that says what to do.
func TestUnsafeAuthConfigurationsAreRefused(t *testing.T) {
	refuse := func(want string, env []string, args ...string) {
		t.Helper()
		cmd := exec.Command(serverBinary(t), args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%v %v started: %s", env, args, out)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 2, ee.ExitCode())
		require.Contains(t, string(out), want)
	}
	refuse("not a loopback address", nil, "--addr", ":0")
	refuse("not a loopback address", nil, "--addr", "0.0.0.0:4437")
	refuse("not a loopback address", []string{"ENTITYD_ADDR=:4437"})
	refuse("ENTITYD_ALLOW_INSECURE_DEV must be true or false", []string{"ENTITYD_ALLOW_INSECURE_DEV=maybe"}, "--addr", ":0")
	refuse("auth mode must be dev or jwt", nil, "--auth", "none")
	refuse("jwt mode needs ENTITYD_JWT_KEYS", nil, "--auth", "jwt")
	refuse("no such file", nil, "--auth", "jwt", "--jwt-keys", filepath.Join(t.TempDir(), "missing.pem"))
	bad := filepath.Join(t.TempDir(), "hmac.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"}]}`), 0o600))
	refuse("HMAC", nil, "--auth", "jwt", "--jwt-keys", bad)
	refuse("ENTITYD_JWT_KEYS is set but the auth mode is dev", []string{"ENTITYD_JWT_KEYS=" + bad})
	refuse("ENTITYD_CORS_ORIGINS", []string{"ENTITYD_CORS_ORIGINS=evil.com"})
	refuse("outbound allow list", []string{"ENTITYD_OUTBOUND_ALLOW=10.0.0.0/99"})
	// the container image: no PostgreSQL to start, so no DATABASE_URL is an error
	refuse("DATABASE_URL is required here", []string{"ENTITYD_REQUIRE_DATABASE_URL=true", "DATABASE_URL="})
}

func TestLoopbackAddresses(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:4437": true, "[::1]:1": true, "localhost:80": true,
		"127.8.8.8:1": true, ":4437": false, "0.0.0.0:1": false, "[::]:1": false, "10.0.0.1:1": false, "example.com:1": false} {
		require.Equal(t, want, loopbackAddr(addr), addr)
	}
}
