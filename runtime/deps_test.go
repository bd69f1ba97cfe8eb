package runtime_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The SDK stands beside the engine on the wire package: a handler binary links no
// database driver and none of the server's packages. These are all the project packages
// the SDK, the wire packages and the out-of-process demo may link.
var sdkMayLink = map[string]bool{
	"runtime": true, "wire": true, "wire/composer": true, "wire/editortool": true, "slashcmd": true,
	"internal/entitypath": true, "internal/rawjson": true, "internal/validation": true,
	"internal/schemas": true, "internal/textpolicy": true,
	// the periodic loop (an external handler's wake heartbeat) and its clock: standard
	// library only
	"internal/lifecycle": true, "internal/clock": true,
	"examples/assistant": true, "cmd/entityd-external": true,
}

func TestSDKLinksNoEngine(t *testing.T) {
	const module = "github.com/entityd/entityd/"
	for _, pkg := range []string{".", "../wire/...", "../slashcmd", "../cmd/entityd-external"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			switch {
			case strings.HasPrefix(dep, "github.com/jackc/"), strings.HasPrefix(dep, "github.com/prometheus/"):
				t.Errorf("%s links %s", pkg, dep)
			case strings.HasPrefix(dep, module) && !sdkMayLink[strings.TrimPrefix(dep, module)]:
				t.Errorf("%s links the engine's %s", pkg, dep)
			}
		}
	}
}
