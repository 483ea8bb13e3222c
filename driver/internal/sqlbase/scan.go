package sqlbase

import (
	"crypto/rand"
	"database/sql"
	"encoding/binary"

	"github.com/batonhq/baton/driver"
)

// Scanner is one row to read: *sql.Rows at a row, or *sql.Row.
type Scanner interface{ Scan(...any) error }

// ScanAll reads every row of rows with scan, in order, and closes rows.
// On a failed scan it returns the error alone; otherwise what it read
// and rows.Err().
func ScanAll[T any](rows *sql.Rows, scan func(Scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ScanString reads a row of one text column.
func ScanString(sc Scanner) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}

// ScanInt64 reads a row of one integer column.
func ScanInt64(sc Scanner) (int64, error) {
	var n int64
	err := sc.Scan(&n)
	return n, err
}

// ScanRequests reads request rows (RequestCols).
func ScanRequests(rows *sql.Rows) ([]driver.Request, error) {
	return ScanAll(rows, func(sc Scanner) (driver.Request, error) { return ScanRequest(sc) })
}

// ScanReleased reads the rows of a release that deletes and returns the
// instances it released: id, kind, namespace, name and mode.
func ScanReleased(rows *sql.Rows) ([]driver.Request, error) {
	return ScanAll(rows, func(sc Scanner) (driver.Request, error) {
		var r driver.Request
		var ns, name []byte
		var mode string // see ScanRequest
		err := sc.Scan(&r.ID, &r.Kind, &ns, &name, &mode)
		r.NS, r.Name, r.Mode = string(ns), string(name), driver.LockMode(mode)
		return r, err
	})
}

// HolderID is a new inline holder's request id (MySQL's lock_fast,
// SQLite's lock_idents): negative, so that it never meets the request
// rows' ids, which start at 1, and sorts before them (the inline holder
// is its identifier's oldest instance), and random: 62 bits make a
// collision between holders of one database negligible.
func HolderID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return -int64(binary.LittleEndian.Uint64(b[:])>>2) - 1
}
