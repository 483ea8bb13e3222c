package batontest

import (
	"context"
	"database/sql"
	"testing"
)

// Strings runs q, whose rows have one column, and returns its values in
// the rows' order; any error fails the test.
func Strings(t testing.TB, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	return ScanStrings(t, rows)
}

// Rows is what ScanStrings reads: *sql.Rows, or pgx's rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanStrings reads rows of one column to their end and returns the
// values in the rows' order; any error fails the test.
func ScanStrings(t testing.TB, rows Rows) []string {
	t.Helper()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
