package fault

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
)

// `sluice import` from a table whose payload is larger than the server's
// max_allowed_packet (a server set low, or a row written before it was
// lowered): the server cannot send that value, and the import must say so,
// naming the row, and write nothing, never copy the row with an empty
// payload. The throwaway server's limit is lowered for this test alone
// (the tests here run one at a time) and put back after it.
func TestImportPayloadPastMaxAllowedPacket(t *testing.T) {
	s := throwaway(t, "mysql")
	_, env := s.target(t)
	db := s.adminDB(t)
	src := s.prefix + "polling_jobs"
	for _, q := range []string{
		`CREATE TABLE ` + src + ` (
		  id BIGINT PRIMARY KEY AUTO_INCREMENT, business_key VARCHAR(191) NULL UNIQUE, type VARCHAR(64) NOT NULL,
		  payload LONGBLOB NULL, status VARCHAR(16) NOT NULL DEFAULT 'pending', attempts INT NOT NULL DEFAULT 0,
		  max_attempts INT NOT NULL DEFAULT 3, next_run_at DATETIME(6) NULL, locked_by VARCHAR(64) NULL,
		  locked_until DATETIME NULL, last_error TEXT NULL, created_at DATETIME(6) NOT NULL,
		  updated_at DATETIME(6) NOT NULL, finished_at DATETIME(6) NULL)`,
		`INSERT INTO ` + src + ` (id, type, payload, created_at, updated_at) VALUES
		  (1, 'sync', '{"a":1}', NOW(6), NOW(6)),
		  (2, 'sync', CONCAT('{"a":"', REPEAT('x', 200000), '"}'), NOW(6), NOW(6))`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	var was int64
	require.NoError(t, db.QueryRow("SELECT @@global.max_allowed_packet").Scan(&was))
	_, err := db.Exec("SET GLOBAL max_allowed_packet = 65536")
	require.NoError(t, err)
	t.Cleanup(func() { db.Exec("SET GLOBAL max_allowed_packet = ?", was) })

	cfg := dbConfig(t, s.url, "types:\n  sync: { command: [\"true\"] }\n")
	r := proctest.Run(t, bin, env, "import", "--config", cfg, "--table", src, "--time-zone", "UTC")
	require.NotEqual(t, 0, r.Code, r.Stdout)
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	require.Len(t, lines, 2, r.Stderr)
	require.Equal(t, src+": row id 2: payload: 200008 bytes, more than this server takes in one value (max_allowed_packet = 65536); "+
		"raise max_allowed_packet to at least 1048576, sluice's payload limit, and import again", lines[0])
	require.Equal(t, "sluice: import "+src+": 1 problem (listed above); nothing written", lines[1])
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+s.prefix+"jobs").Scan(&n))
	require.Zero(t, n, "nothing written")
}
