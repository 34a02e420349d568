package phpclient_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestRulesLimits holds Sluice\Rules' limits to the Go constants they
// copy, so that a limit changed in Go fails here until PHP follows. (The
// run_at bounds, unexported in Go, are held by the shared cases of
// testdata/enqueue_rules.json at their first and last allowed seconds.)
func TestRulesLimits(t *testing.T) {
	phptest.Require(t, "json")
	src := filepath.Join(phptest.ClientDir(), "src", "Rules.php")
	out, err := exec.Command("php", "-r", `require $argv[1]; echo json_encode((new ReflectionClass(Sluice\Rules::class))->getConstants());`, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var php map[string]any
	require.NoError(t, json.Unmarshal(out, &php), "%s", out)
	for name, want := range map[string]int{
		"MAX_TYPE":          sluicetype.MaxTypeLen,
		"MAX_QUEUE":         sluicetype.MaxQueueLen,
		"MAX_KEY":           sluicetype.MaxKeyLen,
		"MAX_PARTITION":     sluicetype.MaxPartitionLen,
		"MIN_PRIORITY":      sluice.MinPriority,
		"MAX_PRIORITY":      sluice.MaxPriority,
		"MAX_ATTEMPTS":      sluice.MaxMaxAttempts,
		"MAX_PAYLOAD_BYTES": sluice.MaxPayloadBytes,
		"MAX_PAYLOAD_DEPTH": sluice.MaxPayloadDepth,
	} {
		require.Contains(t, php, name)
		require.EqualValues(t, want, php[name], "Sluice\\Rules::%s", name)
	}
}
