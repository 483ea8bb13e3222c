// Command gatedcost measures session locks on a name that a transaction
// has locked before (Client.LockTx), which leaves the name gated: the
// slow path decides every later request, release and hand-on of it under
// its row lock, counting a gate that a transaction may hold. It reports
// per operation the mean time and, on MySQL/MariaDB, the client
// statements the server served (Questions, less the status query's own;
// a procedure call counts one) and the redo log's fsyncs:
//
//   - pair: Lock(Write, timeout 1 s) and Release by one session, nobody
//     else on the name;
//   - hand-off: a second session's Lock(Write, 1 s), waiting, granted by
//     the first session's Release (the release's start to the grant),
//     then released.
//
// It works in a scratch database of its own on the DSN's server (a
// schema on PostgreSQL), dropped at the end. Nothing else should run
// against the server meanwhile (docs/benchmarks.md, "Scripts"):
//
//	go run ./scripts/gatedcost -dsn mysql://root@127.0.0.1:3306/test -cycles 300
//	go run ./scripts/gatedcost -dsn postgres://postgres@127.0.0.1:5432/test -cycles 300
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/batonhq/baton"
	_ "github.com/batonhq/baton/driver/mysql"
	_ "github.com/batonhq/baton/driver/postgres"
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

func main() {
	dsn := flag.String("dsn", "", "the database (mysql:// or postgres://)")
	cycles := flag.Int("cycles", 300, "cycles of each operation")
	flag.Parse()
	ctx := context.Background()
	u, err := url.Parse(*dsn)
	if err != nil {
		log.Fatal(err)
	}
	scratch := fmt.Sprintf("gatedcost_%d", os.Getpid())
	admin, target, drop := scratchDB(u, scratch)
	defer admin.Close()
	defer drop()
	c, err := baton.Open(ctx, target)
	if err != nil {
		log.Print(err)
		return
	}
	defer c.Close()
	db, err := sql.Open(sqlDriver(u), sqlDSN(u, scratch))
	if err != nil {
		log.Print(err)
		return
	}
	defer db.Close()
	// The name gated: a transaction locks it once and commits.
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		err = c.LockTx(ctx, tx, "gc", baton.Write, time.Second, "n")
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		log.Print("LockTx: ", err)
		return
	}
	a, err := c.NewSession(ctx)
	if err != nil {
		log.Print(err)
		return
	}
	b, err := c.NewSession(ctx)
	if err != nil {
		log.Print(err)
		return
	}
	counted := u.Scheme != "postgres" && u.Scheme != "postgresql"
	fmt.Printf("%-10s %10s %12s %12s\n", "operation", "mean µs", "statements", "fsyncs")
	// report prints an operation's mean time, and its statements and
	// fsyncs since before where the server counts them (before nil: the
	// hand-off, whose loop also polls the lock table).
	report := func(name string, total time.Duration, before map[string]int64) {
		line := fmt.Sprintf("%-10s %10.0f", name, float64(total.Microseconds())/float64(*cycles))
		if counted && before != nil {
			after := status(ctx, admin)
			q := after["Questions"] - before["Questions"] - 1
			f := after["Innodb_data_fsyncs"] - before["Innodb_data_fsyncs"]
			line += fmt.Sprintf(" %12.1f %12.2f", float64(q)/float64(*cycles), float64(f)/float64(*cycles))
		}
		fmt.Println(line)
	}
	var total time.Duration
	before := status(ctx, admin)
	for range *cycles {
		start := time.Now()
		if _, err := a.Lock(ctx, "gc", baton.Write, time.Second, "n"); err != nil {
			log.Fatal(err)
		}
		if _, err := a.Release(ctx, "gc"); err != nil {
			log.Fatal(err)
		}
		total += time.Since(start)
	}
	report("pair", total, before)
	total = 0
	for range *cycles {
		if _, err := a.Lock(ctx, "gc", baton.Write, time.Second, "n"); err != nil {
			log.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			_, err := b.Lock(ctx, "gc", baton.Write, time.Second, "n")
			if err != nil {
				log.Fatal(err)
			}
			got <- time.Now()
		}()
		waitPending(ctx, c, b)
		start := time.Now()
		if _, err := a.Release(ctx, "gc"); err != nil {
			log.Fatal(err)
		}
		total += (<-got).Sub(start)
		if _, err := b.Release(ctx, "gc"); err != nil {
			log.Fatal(err)
		}
	}
	report("hand-off", total, nil)
}

// waitPending waits until s's lock request shows as waiting.
func waitPending(ctx context.Context, c *baton.Client, s *baton.Session) {
	for {
		locks, err := c.Locks(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, l := range locks {
			if l.Session == s.ID() && l.Status == "PENDING" {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// status reads the server's counters (MySQL/MariaDB; nil elsewhere).
func status(ctx context.Context, db *sql.DB) map[string]int64 {
	out := map[string]int64{}
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Innodb_data_fsyncs')")
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v int64
		if rows.Scan(&k, &v) == nil {
			out[k] = v
		}
	}
	return out
}

func sqlDriver(u *url.URL) string {
	if u.Scheme == "postgres" || u.Scheme == "postgresql" {
		return "pgx"
	}
	return "mysql"
}

// sqlDSN is the DSN of database/sql's driver for the scratch database.
func sqlDSN(u *url.URL, scratch string) string {
	if sqlDriver(u) == "pgx" {
		v := *u
		q := v.Query()
		q.Set("search_path", scratch)
		v.RawQuery = q.Encode()
		return v.String()
	}
	pass, _ := u.User.Password()
	return fmt.Sprintf("%s:%s@tcp(%s)/%s", u.User.Username(), pass, u.Host, scratch)
}

// scratchDB makes the scratch database (a schema on PostgreSQL) and
// returns a connection to the server, baton's DSN for it and its drop.
func scratchDB(u *url.URL, scratch string) (*sql.DB, string, func()) {
	v := *u
	var admin *sql.DB
	var err error
	if sqlDriver(u) == "pgx" {
		admin, err = sql.Open("pgx", u.String())
		if err == nil {
			_, err = admin.Exec("CREATE SCHEMA " + scratch)
		}
		q := v.Query()
		q.Set("search_path", scratch)
		v.RawQuery = q.Encode()
		if err != nil {
			log.Fatal(err)
		}
		return admin, v.String(), func() { _, _ = admin.Exec("DROP SCHEMA " + scratch + " CASCADE") }
	}
	pass, _ := u.User.Password()
	admin, err = sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/", u.User.Username(), pass, u.Host))
	if err == nil {
		_, err = admin.Exec("CREATE DATABASE " + scratch)
	}
	if err != nil {
		log.Fatal(err)
	}
	v.Path = "/" + strings.TrimPrefix(scratch, "/")
	return admin, v.String(), func() { _, _ = admin.Exec("DROP DATABASE " + scratch) }
}
