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
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/readmetest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
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
			// The snippet on the real think-orm 3 (ThinkPHP 8's database
			// layer, which connects lazily), over the guide's database.
			src := "<?php\nrequire __DIR__ . '/vendor/autoload.php';\nrequire " + fmt.Sprintf("%q", thinkORM(t)) +
				";\nthink\\facade\\Db::setConfig(['default' => 'shop', 'connections' => ['shop' => ['type' => 'sqlite', 'database' => __DIR__ . '/shop.db']]]);" +
				"\n$orderId = 2002;\n" + bl.Text
			require.NoError(t, os.WriteFile(filepath.Join(dir, "thinkphp_snippet.php"), []byte(src), 0o644))
			phptest.Run(t, dir, env, "php", "thinkphp_snippet.php")
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

// thinkORM unpacks think-orm 3.0 and think-helper (Apache-2.0, kept outside
// the tree in $SLUICE_TEST_THINK_VENDOR, default /work/shared/vendor) into a
// temporary directory and returns a PHP file that autoloads them: the real
// ThinkPHP 8 database layer, which Debian does not package.
func thinkORM(t *testing.T) string {
	t.Helper()
	src := os.Getenv("SLUICE_TEST_THINK_VENDOR")
	if src == "" {
		src = "/work/shared/vendor"
	}
	phptest.RequireFile(t, "/usr/share/php/Psr/SimpleCache/autoload.php", "php-psr-simple-cache")
	phptest.RequireFile(t, "/usr/share/php/Psr/Log/autoload.php", "php-psr-log")
	dir := t.TempDir()
	for _, tgz := range []string{"think-orm-3.0.tar.gz", "think-helper.tar.gz"} {
		f := filepath.Join(src, tgz)
		if _, err := os.Stat(f); err != nil {
			testdb.Unavailable(t, "think-orm", "set SLUICE_TEST_THINK_VENDOR to the directory holding "+tgz, err, nil)
		}
		out, err := exec.Command("tar", "-xzf", f, "-C", dir).CombinedOutput()
		require.NoError(t, err, "%s: %s", f, out)
	}
	loader := `<?php
spl_autoload_register(function (string $class): void {
    if (str_starts_with($class, 'think\\')) {
        $rel = str_replace('\\', '/', substr($class, 6)) . '.php';
        foreach ([__DIR__ . '/think-orm/src/', __DIR__ . '/think-helper/src/'] as $d) {
            if (is_file($d . $rel)) {
                require $d . $rel;
                return;
            }
        }
    }
});
require '/usr/share/php/Psr/SimpleCache/autoload.php';
require '/usr/share/php/Psr/Log/autoload.php';
require __DIR__ . '/think-orm/stubs/load_stubs.php';
require __DIR__ . '/think-helper/src/helper.php';
`
	f := filepath.Join(dir, "think.php")
	require.NoError(t, os.WriteFile(f, []byte(loader), 0o644))
	return f
}
