// Command idleconsumers measures what waiting costs: N consumers of one
// process wait on N empty queues (one Claim each, waiting forever) for a
// number of seconds, and it reports the statements the database served in
// that time (MariaDB's Questions, PostgreSQL's transactions of the
// database; nothing else should run against the server meanwhile) and the
// process's CPU. Used for docs/benchmarks.md ("One poll per client for
// waiting consumers"):
//
//	go run ./scripts/idleconsumers -dsn postgres://... -n 32 -seconds 20
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"strings"
	"syscall"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver/mysql"
	_ "github.com/batonhq/baton/driver/postgres"
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

func main() {
	dsn := flag.String("dsn", "", "the database (postgres:// or mysql://)")
	n := flag.Int("n", 32, "waiting consumers, one queue each")
	secs := flag.Int("seconds", 20, "how long to measure")
	flag.Parse()
	ctx := context.Background()
	c, err := baton.Open(ctx, *dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, *n)
	for i := range *n {
		s, err := c.NewSession(ctx)
		if err != nil {
			log.Fatal(err)
		}
		q := fmt.Sprintf("idle%d", i)
		go func() {
			defer func() { done <- struct{}{} }()
			_, _ = s.Claim(ctx, q, baton.ClaimOptions{Wait: baton.Forever})
		}()
	}
	time.Sleep(3 * time.Second) // every consumer waits by now
	count := counter(*dsn)
	s0, cpu0 := count(), cpuTime()
	time.Sleep(time.Duration(*secs) * time.Second)
	s1, cpu1 := count(), cpuTime()
	cancel()
	for range *n {
		<-done
	}
	d := float64(*secs)
	fmt.Printf("%d waiting consumers: %.1f statements/s on the server, %.2f%% of a core in the process\n",
		*n, float64(s1-s0)/d, (cpu1-cpu0).Seconds()/d*100)
}

// counter returns a reader of the server's statement count.
func counter(dsn string) func() int64 {
	var db *sql.DB
	var q string
	var err error
	switch {
	case strings.HasPrefix(dsn, "postgres"):
		db, err = sql.Open("pgx", dsn)
		q = "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
	case strings.HasPrefix(dsn, "mysql://"):
		var pc *mysql.Config
		if pc, err = mysql.ParseDSN(dsn); err == nil {
			db, err = sql.Open("mysql", pc.Driver.FormatDSN())
		}
		q = "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'QUESTIONS'"
	default:
		log.Fatal("a postgres:// or mysql:// DSN")
	}
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return func() int64 {
		if strings.HasPrefix(dsn, "postgres") {
			// The statistics of other backends reach the view once they
			// are flushed (at most a second later).
			time.Sleep(1500 * time.Millisecond)
			_, _ = db.Exec("SELECT pg_stat_clear_snapshot()")
		}
		var v int64
		if err := db.QueryRow(q).Scan(&v); err != nil {
			log.Fatal(err)
		}
		return v
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
