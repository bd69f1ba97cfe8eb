package ratelog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLimiterHoldsBackAndCounts(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	l := &Limiter{Every: time.Hour}
	for range 100 {
		l.Log(log, zapcore.WarnLevel, "failed")
	}
	require.Equal(t, 1, logs.Len())
	l.mu.Lock()
	require.Equal(t, 99, l.held)
	l.last = time.Now().Add(-2 * time.Hour) // the interval has passed
	l.mu.Unlock()
	l.Log(log, zapcore.WarnLevel, "failed")
	require.Equal(t, 2, logs.Len())
	require.Equal(t, int64(99), logs.All()[1].ContextMap()["suppressed"])
	l.Log(log, zapcore.DebugLevel, "below the level")
	require.Equal(t, 2, logs.Len())
}
