package dburl_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
)

// Open a database by URL: the scheme picks the driver (sqlite:PATH here;
// mysql://USER:PASS@HOST:PORT/DB and postgres://USER:PASS@HOST:PORT/DB
// the same way). Open does not migrate: Migrate creates or upgrades
// sluice's tables, once per deploy, and reports the schema version.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	url := "sqlite:" + filepath.Join(dir, "app.db")

	d, err := dburl.Open(url, dburl.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.CheckSchema(ctx)
	fmt.Println("before Migrate:", err != nil)
	if _, err := d.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = client.CheckSchema(ctx)
	fmt.Println("after Migrate:", err)
	// Output:
	// before Migrate: true
	// after Migrate: <nil>
}

// A mistyped SQLite path would otherwise open a new, empty database:
// MustExist refuses a file that is not there, with an error that wraps
// ErrNoDatabase.
func ExampleOptions_mustExist() {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	_, err = dburl.Open("sqlite:"+filepath.Join(dir, "typo.db"), dburl.Options{MustExist: true})
	fmt.Println(errors.Is(err, dburl.ErrNoDatabase))
	_, err = os.Stat(filepath.Join(dir, "typo.db"))
	fmt.Println("file created:", err == nil)
	// Output:
	// true
	// file created: false
}

// Scheme names the driver a URL selects without opening anything, and
// refuses a scheme sluice does not know with ErrBadScheme.
func ExampleScheme() {
	for _, url := range []string{
		"sqlite:/var/lib/app/sluice.db",
		"mysql://app:secret@db.internal:3306/app",
		"postgres://app:secret@db.internal:5432/app?sslmode=require",
		"mongodb://db.internal/app",
	} {
		s, err := dburl.Scheme(url)
		fmt.Printf("%q %v\n", s, errors.Is(err, dburl.ErrBadScheme))
	}
	// Output:
	// "sqlite" false
	// "mysql" false
	// "postgres" false
	// "" true
}

// Redact hides the password of a URL, in its user info or its query,
// before the URL goes into a message or a log line.
func ExampleRedact() {
	fmt.Println(dburl.Redact("mysql://app:s3cret@db.internal:3306/app"))
	fmt.Println(dburl.Redact("postgres://app:s3cret@db.internal:5432/app?sslmode=require"))
	fmt.Println(dburl.Redact("postgres://app@db.internal:5432/app?password=s3cret&sslmode=require"))
	fmt.Println(dburl.Redact("sqlite:/var/lib/app/sluice.db"))
	// Output:
	// mysql://app:***@db.internal:3306/app
	// postgres://app:***@db.internal:5432/app?sslmode=require
	// postgres://app@db.internal:5432/app?password=***&sslmode=require
	// sqlite:/var/lib/app/sluice.db
}
