// Command contendcpu measures where 8-way contention on one write lock
// spends the MySQL/MariaDB server's CPU: 8 sessions over 2 clients loop
// Lock(Write, Forever) + Release on one name (bench locks' contend8), then
// 8 connections loop GET_LOCK + RELEASE_LOCK on one name (its baseline),
// each for -seconds after a second's warm-up. For each it prints the
// cycles per second, the server's CPU time per cycle (user and system
// time of the local mariadbd or mysqld process, from /proc), this
// process's CPU time per cycle, and the server's statement counters per
// cycle (SHOW GLOBAL STATUS). The server must run on this machine; run
// nothing else against it meanwhile (docs/benchmarks.md, "Scripts"):
//
//	go run ./scripts/contendcpu -dsn mysql://root@127.0.0.1:3306/test
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver/mysql"
	_ "github.com/go-sql-driver/mysql"
)

var counters = []string{"Questions", "Com_call_procedure", "Com_select", "Com_update", "Com_insert", "Innodb_log_writes", "Created_tmp_tables"}

func main() {
	dsn := flag.String("dsn", "", "the database (mysql://)")
	seconds := flag.Int("seconds", 3, "seconds measured of each loop")
	flag.Parse()
	ctx := context.Background()
	pc, err := mysql.ParseDSN(*dsn)
	if err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("mysql", pc.Driver.FormatDSN())
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	server, err := serverPID()
	if err != nil {
		log.Fatal(err)
	}
	var clients []*baton.Client
	for range 2 {
		c, err := baton.Open(ctx, *dsn)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	var ss []*baton.Session
	for i := range 8 {
		s, err := clients[i%2].NewSession(ctx)
		if err != nil {
			log.Fatal(err)
		}
		ss = append(ss, s)
	}
	measure(db, server, "baton contend8", *seconds, len(ss), func(i int) error {
		if _, err := ss[i].Lock(ctx, "contendcpu", baton.Write, baton.Forever, "x"); err != nil {
			return err
		}
		_, err := ss[i].Release(ctx, "contendcpu")
		return err
	})
	conns := make([]*sql.Conn, 8)
	for i := range conns {
		if conns[i], err = db.Conn(ctx); err != nil {
			log.Fatal(err)
		}
		defer conns[i].Close()
	}
	measure(db, server, "GET_LOCK + RELEASE_LOCK", *seconds, len(conns), func(i int) error {
		var got sql.NullInt64
		if err := conns[i].QueryRowContext(ctx, "SELECT GET_LOCK('contendcpu', 3600)").Scan(&got); err != nil || got.Int64 != 1 {
			return errors.Join(err, fmt.Errorf("GET_LOCK: %v", got))
		}
		return conns[i].QueryRowContext(ctx, "SELECT RELEASE_LOCK('contendcpu')").Scan(&got)
	})
}

// measure runs cycle on workers goroutines for a second, then for
// seconds, and prints what the second run cost per cycle.
func measure(db *sql.DB, server int, label string, seconds, workers int, cycle func(i int) error) {
	run := func(d time.Duration) int64 {
		var n atomic.Int64
		stop := time.Now().Add(d)
		var wg sync.WaitGroup
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					if err := cycle(i); err != nil {
						log.Fatal(err)
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		return n.Load()
	}
	run(time.Second)
	before, cpu0, self0 := status(db), cpuTime(server), cpuTime(os.Getpid())
	n := run(time.Duration(seconds) * time.Second)
	after, cpu1, self1 := status(db), cpuTime(server), cpuTime(os.Getpid())
	per := func(x float64) float64 { return x / float64(n) }
	fmt.Printf("%s: %.0f cycles/s, server CPU %.0f µs/cycle, client CPU %.0f µs/cycle\n",
		label, float64(n)/float64(seconds), per((cpu1-cpu0)*1e6), per((self1-self0)*1e6))
	for _, k := range counters {
		fmt.Printf("  %-20s %6.2f per cycle\n", k, per(float64(after[k]-before[k])))
	}
}

// status reads the server's global status counters.
func status(db *sql.DB) map[string]int64 {
	out := map[string]int64{}
	rows, err := db.Query("SHOW GLOBAL STATUS")
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			log.Fatal(err)
		}
		var n int64
		if _, err := fmt.Sscan(v.String, &n); err == nil {
			out[k] = n
		}
	}
	return out
}

// serverPID finds the local mariadbd or mysqld process.
func serverPID() (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil {
			continue
		}
		if name := strings.TrimSpace(string(comm)); name == "mariadbd" || name == "mysqld" {
			var pid int
			_, err := fmt.Sscan(e.Name(), &pid)
			return pid, err
		}
	}
	return 0, errors.New("no mariadbd or mysqld process on this machine")
}

// cpuTime is a process's user and system CPU time in seconds (clock
// ticks of 1/100 s).
func cpuTime(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		log.Fatal(err)
	}
	f := strings.Fields(string(b)[strings.LastIndex(string(b), ")")+2:])
	var user, system float64
	fmt.Sscan(f[11], &user)
	fmt.Sscan(f[12], &system)
	return (user + system) / 100
}
