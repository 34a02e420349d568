// Command sluice runs durable background jobs on SQLite, MySQL / MariaDB or
// PostgreSQL. See `sluice --help`.
package main

import (
	"os"

	"github.com/sluicehq/sluice/cmd/sluice/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
