package sqlcommon

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/driver"
)

// shared holds the queries whose text is the same on more than one
// database, so that it is written once. queries/*.sql are every driver's;
// queries/A_B/*.sql are those of drivers A and B only, the third writing
// its own: a driver takes each directory whose name, split on "_", holds
// its own name (Driver.Name: mysql, postgres, sqlite).
//
//go:embed queries/*.sql queries/*/*.sql
var shared embed.FS

// LoadFiles loads the SQL files of the driver named db from fsys: its
// queries (see LoadQueries) and its migrations, under prefix.
func LoadFiles(fsys fs.FS, db, prefix string, required ...string) (map[string]string, []driver.Migration, error) {
	q, err := LoadQueries(fsys, db, prefix, required...)
	if err != nil {
		return nil, nil, err
	}
	migs, err := driver.LoadMigrations(fsys, "migrations", prefix)
	if err != nil {
		return nil, nil, err
	}
	return q, migs, nil
}

// LoadQueries loads the queries of the driver named db from the queries
// directory of fsys, together with the shared ones it takes, under
// prefix, and checks that every required one is there. A query name may
// stand in one place only: which text runs would otherwise depend on the
// order of loading.
func LoadQueries(fsys fs.FS, db, prefix string, required ...string) (map[string]string, error) {
	q, err := driver.LoadQueries(fsys, "queries", prefix)
	if err != nil {
		return nil, err
	}
	dirs, err := sharedDirs(db)
	if err != nil {
		return nil, err
	}
	from := map[string]string{} // shared query name -> its directory
	for _, dir := range dirs {
		common, err := driver.LoadQueries(shared, dir, prefix)
		if err != nil {
			return nil, err
		}
		for name, text := range common {
			if other, ok := from[name]; ok {
				return nil, fmt.Errorf("query %s.sql is in both sqlcommon's %s and %s", name, other, dir)
			}
			if _, ok := q[name]; ok {
				return nil, fmt.Errorf("query %s.sql is both the driver's and sqlcommon's", name)
			}
			from[name] = dir
			q[name] = text
		}
	}
	for _, name := range required {
		if q[name] == "" {
			return nil, fmt.Errorf("query %s.sql is missing or empty", name)
		}
	}
	return q, nil
}

// sharedDirs lists the directories of shared that the driver named db
// takes: queries, and each queries/A_B that names it.
func sharedDirs(db string) ([]string, error) {
	entries, err := fs.ReadDir(shared, "queries")
	if err != nil {
		return nil, fmt.Errorf("read shared queries: %w", err)
	}
	dirs := []string{"queries"}
	for _, e := range entries {
		if e.IsDir() && slices.Contains(strings.Split(e.Name(), "_"), db) {
			dirs = append(dirs, path.Join("queries", e.Name()))
		}
	}
	return dirs, nil
}
