//go:build ncruces

package main

import _ "github.com/ncruces/go-sqlite3/driver"

// NOTE: github.com/ncruces/go-sqlite3/embed is deprecated/no-op in v0.35.x (SQLite is
// wasm2go-translated Go code in github.com/ncruces/go-sqlite3-wasm/v6); importing it
// only prints a warning at init, so it is not imported here.

const drvLabel = "ncruces"
const drvName = "sqlite3"

// ncruces: _pragma=... in listed order (busy_timeout first), _txlock=immediate.
func dsn(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}
