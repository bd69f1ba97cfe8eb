package attachment

import (
	"testing"

	"github.com/entityd/entityd/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
