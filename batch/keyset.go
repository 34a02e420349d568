package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// identPattern is what a key or window column may be: these names are
// written into SQL text, so only plain identifiers pass.
var identPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// orderLimit catches a source that orders or limits by itself: the keyset
// query adds its own ORDER BY and LIMIT, and an inner one would make chunks
// skip rows. It may reject a string literal holding these words; write the
// literal as a bound value or a CONCAT then.
var orderLimit = regexp.MustCompile(`(?i)\b(order\s+by|limit|offset|fetch\s+first)\b`)

// shardMarker in a source is replaced with a bind parameter holding the shard value.
const shardMarker = "{shard}"

// CheckIdent reports whether name can be written into SQL as a column name.
func CheckIdent(name string) error {
	if !identPattern.MatchString(name) {
		return fmt.Errorf("column %q: want a plain identifier (letters, digits, _; not starting with a digit)", name)
	}
	return nil
}

// CheckSource rejects a source query the keyset query cannot wrap.
func CheckSource(source string) error {
	s := strings.TrimSpace(source)
	if s == "" {
		return fmt.Errorf("empty source query")
	}
	if !strings.HasPrefix(strings.ToUpper(s), "SELECT") && !strings.HasPrefix(strings.ToUpper(s), "WITH") {
		return fmt.Errorf("source must be a SELECT")
	}
	if m := orderLimit.FindString(s); m != "" {
		return fmt.Errorf("source must not contain %s: the batch orders by the key and limits each chunk itself", strings.ToUpper(m))
	}
	if strings.Contains(s, ";") {
		return fmt.Errorf("source must be one statement without ';'")
	}
	return nil
}

// timeArg renders a window bound. SQLite keeps times as text, so a bound
// is compared as text and must have SQLite's own datetime() layout, UTC:
// a time.Time would be bound in the driver's "... -07:00" layout, which
// sorts after a stored "2024-01-02 00:00:00" and would put a row exactly
// on the boundary in the wrong window.
func timeArg(d driver.Dialect, t time.Time) any {
	if d.TextTimes {
		return t.UTC().Format("2006-01-02 15:04:05.999999")
	}
	return t.UTC()
}

// query accumulates SQL text and its arguments, numbering placeholders in order.
type query struct {
	d    driver.Dialect
	sql  strings.Builder
	args []any
}

func (q *query) bind(v any) string {
	q.args = append(q.args, v)
	return q.d.Placeholder(len(q.args))
}

// chunkQuery writes the query for the chunk after cursor (nil: the first).
//
// The keyset predicate has two forms, chosen per database:
//   - PostgreSQL and SQLite get a row comparison, (k1, k2) > (?, ?), which
//     both planners turn into one index range scan (EXPLAIN on PostgreSQL
//     shows an Index Cond on the row; SQLite's EXPLAIN QUERY PLAN shows
//     SEARCH ... USING INDEX (k1>?)).
//   - MariaDB does not use an index range for a row comparison (EXPLAIN
//     shows type ALL or a full index scan), so MySQL and MariaDB get the
//     expanded k1 >= ? AND (k1 > ? OR (k1 = ? AND k2 > ?)), whose leading
//     k1 >= ? gives the range optimizer a bound (type range).
//
// Never OFFSET: each chunk starts from the last key of the previous one,
// so the cost of a chunk does not grow with the position.
//
// SQLite also selects each key again as +s.k (unary plus is a no-op that
// drops the column's declared type): the driver turns DATETIME text into
// time.Time, which would come back bound in another text layout and compare
// wrongly, while the raw value compares exactly as stored.
func (r *shardRun) chunkQuery(cursor []any, limit int) *query {
	b := r.b
	q := &query{d: r.d}
	q.sql.WriteString("SELECT s.*")
	if r.d.TextTimes {
		for i, k := range b.Key {
			fmt.Fprintf(&q.sql, ", +s.%s AS %s%d", k, rawKeyPrefix, i)
		}
	}
	q.sql.WriteString(" FROM (")
	q.sql.WriteString(r.source(q))
	q.sql.WriteString(") s")
	var where []string
	if r.shard.window != nil {
		col := b.Shards.Window.Column
		where = append(where, fmt.Sprintf("s.%s >= %s AND s.%s < %s", col, q.bind(timeArg(r.d, r.shard.window.from)),
			col, q.bind(timeArg(r.d, r.shard.window.to))))
	}
	if cursor != nil {
		where = append(where, r.keysetPredicate(q, cursor))
	}
	if len(where) > 0 {
		q.sql.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	q.sql.WriteString(" ORDER BY ")
	for i, k := range b.Key {
		if i > 0 {
			q.sql.WriteString(", ")
		}
		q.sql.WriteString("s." + k)
	}
	if limit > 0 {
		fmt.Fprintf(&q.sql, " LIMIT %d", limit)
	}
	return q
}

// rawKeyPrefix names SQLite's extra key columns, which rows do not show.
const rawKeyPrefix = "sluice_k"

// source returns the source with each {shard} bound to the shard's value.
func (r *shardRun) source(q *query) string {
	parts := strings.Split(r.b.Source, shardMarker)
	var s strings.Builder
	for i, p := range parts {
		if i > 0 {
			s.WriteString(q.bind(r.shard.value))
		}
		s.WriteString(p)
	}
	return s.String()
}

func (r *shardRun) keysetPredicate(q *query, cursor []any) string {
	keys := r.b.Key
	if len(keys) == 1 {
		return fmt.Sprintf("s.%s > %s", keys[0], q.bind(cursor[0]))
	}
	if r.d.RowCompare {
		cols := make([]string, len(keys))
		phs := make([]string, len(keys))
		for i, k := range keys {
			cols[i] = "s." + k
			phs[i] = q.bind(cursor[i])
		}
		return "(" + strings.Join(cols, ", ") + ") > (" + strings.Join(phs, ", ") + ")"
	}
	// k1 >= v1 AND (k1 > v1 OR (k1 = v1 AND (k2 > v2 OR (k2 = v2 AND k3 > v3))))
	var s strings.Builder
	fmt.Fprintf(&s, "s.%s >= %s AND ", keys[0], q.bind(cursor[0]))
	for i, k := range keys {
		if i == len(keys)-1 {
			fmt.Fprintf(&s, "s.%s > %s", k, q.bind(cursor[i]))
			break
		}
		fmt.Fprintf(&s, "(s.%s > %s OR (s.%s = %s AND ", k, q.bind(cursor[i]), k, q.bind(cursor[i]))
	}
	s.WriteString(strings.Repeat("))", len(keys)-1))
	return "(" + s.String() + ")"
}

// encodeCursor writes key values as a JSON array in key order. A time is
// written as {"time": RFC 3339} so that it comes back as a time.Time and
// is bound as a time, not as a string in a layout the database may not
// compare correctly.
func encodeCursor(vals []any) (string, error) {
	out := make([]any, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case time.Time:
			out[i] = map[string]string{"time": v.Format(time.RFC3339Nano)}
		case []byte:
			out[i] = string(v)
		default:
			out[i] = v
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	return string(b), nil
}

// decodeCursor reads encodeCursor's output; "" is the start.
func decodeCursor(s string, n int) ([]any, error) {
	if s == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber() // an int64 key must not pass through float64
	var raw []any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("decode cursor %q: %w", s, err)
	}
	if len(raw) != n {
		return nil, fmt.Errorf("cursor %q has %d values, the key has %d columns (did the key change? reset the batch)", s, len(raw), n)
	}
	for i, v := range raw {
		switch v := v.(type) {
		case json.Number:
			if n, err := v.Int64(); err == nil {
				raw[i] = n
			} else if f, err := v.Float64(); err == nil {
				raw[i] = f
			}
		case map[string]any:
			ts, _ := v["time"].(string)
			t, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				return nil, fmt.Errorf("decode cursor %q: bad time %v", s, v["time"])
			}
			raw[i] = t
		}
	}
	return raw, nil
}
