package mysql

import (
	"testing"

	"github.com/sluicehq/sluice/driver/internal/sqldriver/cataloguetest"
)

// The catalogue loads without a database (cataloguetest.RequireLoads).
func TestQueriesLoad(t *testing.T) {
	q := new(queries)
	cataloguetest.RequireLoads(t, q, files, func() string { return q.Get })
}
