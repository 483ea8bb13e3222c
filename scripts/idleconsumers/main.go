// Command idleconsumers measures what waiting costs: N consumers of one
// process wait on N empty queues (one Claim each, waiting forever), and L
// sessions wait for read locks on L names another session holds, for a
// number of seconds, and it reports the statements the database served in
// that time (MariaDB's Questions, PostgreSQL's transactions of the
// database; nothing else should run against the server meanwhile) and the
// process's CPU (docs/benchmarks.md, "Scripts"):
//
//	go run ./scripts/idleconsumers -dsn postgres://... -n 32 -seconds 20
//	go run ./scripts/idleconsumers -dsn mysql://... -n 0 -locks 6
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
	locks := flag.Int("locks", 0, "waiting lock requests, one name each")
	secs := flag.Int("seconds", 20, "how long to measure")
	flag.Parse()
	ctx := context.Background()
	c, err := baton.Open(ctx, *dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, *n+*locks)
	waitLocks(ctx, c, *locks, done)
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
	if strings.HasPrefix(*dsn, "postgres") {
		// A backend left idle reports its transactions up to 10 s later
		// (PostgreSQL's idle statistics flush): the opening's hundreds
		// (the statements prepared and described) must be counted by now.
		time.Sleep(11 * time.Second)
	}
	count := counter(*dsn)
	s0, cpu0 := count(), cpuTime()
	time.Sleep(time.Duration(*secs) * time.Second)
	s1, cpu1 := count(), cpuTime()
	cancel()
	for range *n + *locks {
		<-done
	}
	d := float64(*secs)
	fmt.Printf("%d waiting consumers, %d waiting lock requests: %.1f statements/s on the server, %.2f%% of a core in the process\n",
		*n, *locks, float64(s1-s0)/d, (cpu1-cpu0).Seconds()/d*100)
}

// waitLocks takes n names in write mode in one session, and starts n
// sessions each waiting for one of them in read mode until ctx ends;
// each sends to done when it has.
func waitLocks(ctx context.Context, c *baton.Client, n int, done chan<- struct{}) {
	if n == 0 {
		return
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("idle%d", i)
	}
	holder, err := c.NewSession(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := holder.Lock(ctx, "idle", baton.Write, 0, names...); err != nil {
		log.Fatal(err)
	}
	for _, name := range names {
		s, err := c.NewSession(ctx)
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer func() { done <- struct{}{} }()
			_, _ = s.Lock(ctx, "idle", baton.Read, baton.Forever, name)
		}()
	}
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
			// are flushed (a second later for a busy backend, up to ten
			// for one that went idle: in a steady state as many come
			// late into the window as leave it).
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
