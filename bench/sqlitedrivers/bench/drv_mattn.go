//go:build mattn

package main

import _ "github.com/mattn/go-sqlite3"

const drvLabel = "mattn"
const drvName = "sqlite3"

// mattn: DSN params; _txlock=immediate makes db.Begin() issue BEGIN IMMEDIATE.
func dsn(path string) string {
	return "file:" + path + "?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000&_txlock=immediate"
}
