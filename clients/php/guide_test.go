package phpclient_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/readmetest"
	"github.com/sluicehq/sluice/internal/testdb"
)

var bin string

func TestMain(m *testing.M) { testdb.MainWithBinary(m, &bin) }

// guides are the PHP guide and its translations: each must have the
// English one's blocks, marker for marker and byte for byte, so that the
// one run here is the one every reader follows.
var guides = []string{"docs/php.md", "docs/zh/php.md"}

// TestPHPGuide runs docs/php.md as a reader would, in one fresh directory
// with the real sluice binary on PATH: `file` blocks are written, `run`
// blocks run in bash in order (what they start in the background is
// stopped when the test ends), and `same FILE` blocks must appear verbatim
// in FILE, an example that its own test runs.
func TestPHPGuide(t *testing.T) {
	phptest.Require(t, "pdo_sqlite", "curl")
	root := filepath.Dir(filepath.Dir(phptest.ClientDir()))
	docs := map[string][]readmetest.Block{}
	for _, g := range guides {
		b, err := os.ReadFile(filepath.Join(root, g))
		require.NoError(t, err)
		blocks, err := readmetest.Parse(g, string(b))
		require.NoError(t, err, g)
		for _, bl := range blocks {
			if bl.Lang != "" && bl.Marker == "" {
				t.Errorf("%s:%d: a %s block without a readme-test marker", g, bl.Line, bl.Lang)
			}
		}
		docs[g] = blocks
	}
	en := docs[guides[0]]
	for _, g := range guides[1:] {
		require.Equal(t, len(en), len(docs[g]), "%s has the blocks of %s", g, guides[0])
		for i, bl := range docs[g] {
			require.Equal(t, en[i].Marker, bl.Marker, "%s:%d: the marker of %s:%d", g, bl.Line, guides[0], en[i].Line)
			require.Equal(t, en[i].Text, bl.Text, "%s:%d: the block of %s:%d", g, bl.Line, guides[0], en[i].Line)
		}
	}

	dir := t.TempDir()
	receiver, listen := testdb.FreeAddr(t), testdb.FreeAddr(t)
	env := proctest.Env([]string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"), "SLUICE_SRC=" + root,
		"COMPOSER_HOME=" + t.TempDir(), "COMPOSER_NO_INTERACTION=1", "COMPOSER_DISABLE_NETWORK=1",
		"RECEIVER=" + receiver, "SLUICE_LISTEN=" + listen})
	var out strings.Builder
	thinkphp := false
	for _, bl := range en {
		switch bl.Kind() {
		case "file":
			require.NoError(t, os.WriteFile(filepath.Join(dir, bl.Args()[1]), []byte(bl.Text), 0o644))
		case "same":
			b, err := os.ReadFile(filepath.Join(root, bl.Args()[0]))
			require.NoError(t, err)
			require.Contains(t, string(b), strings.TrimRight(bl.Text, "\n"), "docs/php.md:%d is no longer in %s", bl.Line, bl.Args()[0])
		case "run":
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", bl.Text)
			cmd.Dir, cmd.Env = dir, env
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			pgid := cmd.Process.Pid
			t.Cleanup(func() {
				syscall.Kill(-pgid, syscall.SIGTERM)
				time.Sleep(100 * time.Millisecond)
				syscall.Kill(-pgid, syscall.SIGKILL)
			})
			err := cmd.Wait()
			require.NoError(t, err, "docs/php.md:%d:\n%s\n%s%s", bl.Line, bl.Text, stdout.String(), stderr.String())
			out.WriteString(stdout.String())
		case "thinkphp":
			// The snippet, with a stand-in for think\facade\Db over the guide's database.
			src := "<?php\nrequire __DIR__ . '/vendor/autoload.php';\nrequire " + fmt.Sprintf("%q", filepath.Join(phptest.ClientDir(), "tests/fixtures/thinkphp_shim.php")) +
				";\n$orderId = 2002;\n" + bl.Text
			require.NoError(t, os.WriteFile(filepath.Join(dir, "thinkphp_snippet.php"), []byte(src), 0o644))
			phptest.Run(t, dir, append(env, "THINKPHP_DSN=sqlite:"+filepath.Join(dir, "shop.db")), "php", "thinkphp_snippet.php")
			thinkphp = true
		case "skip":
		default:
			t.Fatalf("docs/php.md:%d: unknown marker %q", bl.Line, bl.Marker)
		}
	}
	require.Contains(t, out.String(), `{"job":1,"duplicate":true,"same":true}`)
	require.Contains(t, out.String(), `"done":1`)
	d, err := dburl.Open("sqlite:"+filepath.Join(dir, "shop.db"), dburl.Options{})
	require.NoError(t, err)
	defer d.Close()
	var status, job string
	require.NoError(t, d.DB().QueryRow(`SELECT o.status, j.status FROM orders o JOIN sluice_jobs j ON j.business_key = 'order:' || o.id WHERE o.id = 1001`).Scan(&status, &job))
	require.Equal(t, "synced", status)
	require.Equal(t, "success", job)
	require.True(t, thinkphp, "the ThinkPHP block ran")
	var n int
	require.NoError(t, d.DB().QueryRow(`SELECT COUNT(*) FROM orders o JOIN sluice_jobs j ON j.business_key = 'order:2002' AND j.type = 'order_sync' WHERE o.id = 2002`).Scan(&n))
	require.Equal(t, 1, n, "the ThinkPHP snippet placed order 2002 and its job in one transaction")
}
