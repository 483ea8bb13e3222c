// Package scratch gives the measurement scripts a MySQL/MariaDB database
// of their own on the server of a baton DSN, and the server's counters.
package scratch

import (
	"database/sql"
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"

	"github.com/batonhq/baton/driver/mysql"
	_ "github.com/go-sql-driver/mysql"
)

// MySQL creates the database NAME_PID on the server of dsn (mysql://) and
// returns a connection to the server, baton's DSN for the new database
// and a func that drops it. It stops the program when it cannot.
func MySQL(dsn, name string) (admin *sql.DB, batonDSN string, drop func()) {
	pc, err := mysql.ParseDSN(dsn)
	if err != nil {
		log.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		log.Fatal(err)
	}
	db := fmt.Sprintf("%s_%d", name, os.Getpid())
	pc.Driver.DBName = ""
	if admin, err = sql.Open("mysql", pc.Driver.FormatDSN()); err != nil {
		log.Fatal(err)
	}
	if _, err := admin.Exec("CREATE DATABASE " + db); err != nil {
		log.Fatal(err)
	}
	u.Path = "/" + db
	return admin, u.String(), func() { _, _ = admin.Exec("DROP DATABASE " + db) }
}

// Status reads the server's global counters of the names given (letters
// and underscores), in one statement: a caller subtracting the status
// queries' own statements counts one each. It panics when it cannot, so
// that the caller's deferred drop still runs.
func Status(db *sql.DB, names ...string) map[string]int64 {
	quoted := make([]string, len(names))
	for i, n := range names {
		if strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") != "" {
			log.Panicf("status: bad counter name %q", n)
		}
		quoted[i] = "'" + n + "'"
	}
	rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name IN (" + strings.Join(quoted, ", ") + ")")
	if err != nil {
		log.Panic(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			log.Panic(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		log.Panic(err)
	}
	return out
}
