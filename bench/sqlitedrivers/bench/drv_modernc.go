//go:build modernc

package main

import _ "modernc.org/sqlite"

const drvLabel = "modernc"
const drvName = "sqlite"

// modernc: _pragma=... executed on every new conn (busy_timeout always first), _txlock=immediate.
func dsn(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}
