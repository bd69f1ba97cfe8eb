package livefeed_test

import (
	"testing"

	"github.com/entityd/entityd/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
