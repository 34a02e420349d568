package sqlcommon

import (
	"embed"
	"fmt"
	"io/fs"

	"github.com/sluicehq/sluice/driver"
)

// shared holds the queries whose text is the same on every database, so
// that it is written once.
//
//go:embed queries/*.sql
var shared embed.FS

// LoadFiles loads a driver's SQL files from fsys: its queries (see
// LoadQueries) and its migrations, under prefix.
func LoadFiles(fsys fs.FS, prefix string, required ...string) (map[string]string, []driver.Migration, error) {
	q, err := LoadQueries(fsys, prefix, required...)
	if err != nil {
		return nil, nil, err
	}
	migs, err := driver.LoadMigrations(fsys, "migrations", prefix)
	if err != nil {
		return nil, nil, err
	}
	return q, migs, nil
}

// LoadQueries loads a driver's queries from the queries directory of
// fsys, together with the shared ones, under prefix, and checks that every
// required one is there. A driver file may not bear a shared query's name:
// which text runs would otherwise depend on the order of loading.
func LoadQueries(fsys fs.FS, prefix string, required ...string) (map[string]string, error) {
	q, err := driver.LoadQueries(fsys, "queries", prefix)
	if err != nil {
		return nil, err
	}
	common, err := driver.LoadQueries(shared, "queries", prefix)
	if err != nil {
		return nil, err
	}
	for name, text := range common {
		if _, ok := q[name]; ok {
			return nil, fmt.Errorf("query %s.sql is both the driver's and sqlcommon's", name)
		}
		q[name] = text
	}
	for _, name := range required {
		if q[name] == "" {
			return nil, fmt.Errorf("query %s.sql is missing or empty", name)
		}
	}
	return q, nil
}
