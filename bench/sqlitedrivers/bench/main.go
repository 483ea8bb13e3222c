package main

import (
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

var (
	dur   = flag.Duration("dur", 3*time.Second, "measurement duration per workload")
	warm  = flag.Duration("warm", 500*time.Millisecond, "warm-up duration per workload")
	probe = flag.Bool("probe", false, "print behaviour probes (pragmas, BEGIN IMMEDIATE check, RETURNING, time types)")
)

const schema = `
CREATE TABLE ids(kind INTEGER, ns BLOB, name BLOB, fence INTEGER, n_r INTEGER, n_w INTEGER, n_p INTEGER, PRIMARY KEY(kind,ns,name));
CREATE TABLE reqs(id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT, kind INTEGER, ns BLOB, name BLOB, mode TEXT, status TEXT, token INTEGER, created_at INTEGER);
CREATE INDEX reqs_key ON reqs(kind,ns,name,id);
CREATE INDEX reqs_session ON reqs(session);
`

const (
	qAcquire = `INSERT INTO ids VALUES(0,?,?,1,0,1,0) ON CONFLICT(kind,ns,name) DO UPDATE SET fence=fence+1, n_w=n_w+1 WHERE n_w=0 AND n_r=0 AND n_p=0 RETURNING fence`
	qInsReq  = `INSERT INTO reqs(session,kind,ns,name,mode,status,token,created_at) VALUES(?,?,?,?,?,?,?,?)`
	qDelReq  = `DELETE FROM reqs WHERE session=? AND kind=0 AND ns=?`
	qRelease = `UPDATE ids SET n_w=n_w-1 WHERE kind=0 AND ns=? AND name=?`
	qRead    = `SELECT fence FROM ids WHERE kind=0 AND ns=? AND name=?`
	qDataVer = `PRAGMA data_version`
)

const nNames = 256

var (
	ns    = []byte("bench-ns")
	names [nNames][]byte
	sess  [nNames]string
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "FATAL:", err)
		os.Exit(1)
	}
}

func open(path string) *sql.DB {
	db, err := sql.Open(drvName, dsn(path))
	must(err)
	db.SetMaxOpenConns(1)
	must(db.Ping())
	return db
}

type stmts struct{ acq, ins, del, rel, read, dv *sql.Stmt }

func prepare(db *sql.DB) *stmts {
	p := func(q string) *sql.Stmt { s, err := db.Prepare(q); must(err); return s }
	return &stmts{p(qAcquire), p(qInsReq), p(qDelReq), p(qRelease), p(qRead), p(qDataVer)}
}

// one acquire+release pair
func pair(db *sql.DB, st *stmts, i int) error {
	k := i % nNames
	name, s := names[k], sess[k]
	var fence int64
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	if st != nil {
		err = tx.Stmt(st.acq).QueryRow(ns, name).Scan(&fence)
	} else {
		err = tx.QueryRow(qAcquire, ns, name).Scan(&fence)
	}
	if err != nil {
		tx.Rollback()
		return fmt.Errorf("acquire: %w", err)
	}
	args := []any{s, 0, ns, name, "w", "granted", fence, time.Now().UnixNano()}
	if st != nil {
		_, err = tx.Stmt(st.ins).Exec(args...)
	} else {
		_, err = tx.Exec(qInsReq, args...)
	}
	if err != nil {
		tx.Rollback()
		return err
	}
	if err = tx.Commit(); err != nil {
		return err
	}

	tx, err = db.Begin()
	if err != nil {
		return err
	}
	if st != nil {
		_, err = tx.Stmt(st.del).Exec(s, ns)
		if err == nil {
			_, err = tx.Stmt(st.rel).Exec(ns, name)
		}
	} else {
		_, err = tx.Exec(qDelReq, s, ns)
		if err == nil {
			_, err = tx.Exec(qRelease, ns, name)
		}
	}
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func read(db *sql.DB, st *stmts, i int) error {
	var f int64
	if st != nil {
		return st.read.QueryRow(ns, names[i%nNames]).Scan(&f)
	}
	return db.QueryRow(qRead, ns, names[i%nNames]).Scan(&f)
}

func dataVersion(db *sql.DB, st *stmts, _ int) error {
	var v int64
	if st != nil {
		return st.dv.QueryRow().Scan(&v)
	}
	return db.QueryRow(qDataVer).Scan(&v)
}

func measure(fn func(int) error) float64 {
	i := 0
	end := time.Now().Add(*warm)
	for time.Now().Before(end) {
		must(fn(i))
		i++
	}
	n := 0
	start := time.Now()
	end = start.Add(*dur)
	for {
		must(fn(i))
		i++
		n++
		if n%16 == 0 && !time.Now().Before(end) {
			break
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

func main() {
	flag.Parse()
	for i := range names {
		names[i] = []byte(fmt.Sprintf("lock/%04d", i))
		sess[i] = fmt.Sprintf("session-%04d", i)
	}
	dir, err := os.MkdirTemp("", "sqlitebench-"+drvLabel)
	must(err)
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bench.db")
	db := open(path)
	defer db.Close()
	_, err = db.Exec(schema)
	must(err)

	// background rows so the b-trees are not trivially tiny
	tx, err := db.Begin()
	must(err)
	for i := 0; i < 10000; i++ {
		_, err = tx.Exec(`INSERT INTO ids VALUES(0,?,?,1,0,0,0)`, []byte("other-ns"), []byte(fmt.Sprintf("k%06d", i)))
		must(err)
	}
	must(tx.Commit())

	if *probe {
		probes(db, path)
		return
	}

	st := prepare(db)
	for _, variant := range []struct {
		name string
		st   *stmts
	}{{"prepared", st}, {"adhoc", nil}} {
		s := variant.st
		fmt.Printf("RESULT %s pair %s %.0f\n", drvLabel, variant.name, measure(func(i int) error { return pair(db, s, i) }))
		fmt.Printf("RESULT %s read %s %.0f\n", drvLabel, variant.name, measure(func(i int) error { return read(db, s, i) }))
		fmt.Printf("RESULT %s data_version %s %.0f\n", drvLabel, variant.name, measure(func(i int) error { return dataVersion(db, s, i) }))
	}
}

func probes(db *sql.DB, path string) {
	var ver, jm string
	var syncv, bt int64
	must(db.QueryRow(`SELECT sqlite_version()`).Scan(&ver))
	must(db.QueryRow(`PRAGMA journal_mode`).Scan(&jm))
	must(db.QueryRow(`PRAGMA synchronous`).Scan(&syncv))
	must(db.QueryRow(`PRAGMA busy_timeout`).Scan(&bt))
	fmt.Printf("PROBE %s sqlite_version=%s journal_mode=%s synchronous=%d busy_timeout=%d dsn=%q\n", drvLabel, ver, jm, syncv, bt, dsn("<path>"))

	// default busy_timeout with a bare DSN
	bare, err := sql.Open(drvName, "file:"+path)
	must(err)
	must(bare.QueryRow(`PRAGMA busy_timeout`).Scan(&bt))
	fmt.Printf("PROBE %s bare-DSN busy_timeout=%d\n", drvLabel, bt)
	bare.Close()

	// BEGIN IMMEDIATE check: db.Begin() must take the RESERVED lock right away,
	// so a second connection's BEGIN IMMEDIATE (busy_timeout=0) fails with BUSY.
	other := open(path)
	_, err = other.Exec(`PRAGMA busy_timeout=0`)
	must(err)
	tx, err := db.Begin()
	must(err)
	_, err = other.Exec(`BEGIN IMMEDIATE`)
	if err != nil {
		fmt.Printf("PROBE %s db.Begin() is IMMEDIATE: yes (other conn got: %v)\n", drvLabel, err)
	} else {
		fmt.Printf("PROBE %s db.Begin() is IMMEDIATE: NO (other conn acquired write lock)\n", drvLabel)
		other.Exec(`ROLLBACK`)
	}
	tx.Rollback()
	other.Close()

	// RETURNING: first acquire returns fence, second (held) matches no rows -> ErrNoRows
	var fence int64
	err = db.QueryRow(qAcquire, ns, []byte("probe")).Scan(&fence)
	fmt.Printf("PROBE %s RETURNING fresh insert: fence=%d err=%v\n", drvLabel, fence, err)
	err = db.QueryRow(qAcquire, ns, []byte("probe")).Scan(&fence)
	fmt.Printf("PROBE %s RETURNING conflict-not-updated: err=%v (ErrNoRows=%v)\n", drvLabel, err, errors.Is(err, sql.ErrNoRows))
	// RETURNING via Exec: does the write happen, what is RowsAffected?
	_, err = db.Exec(qRelease, ns, []byte("probe"))
	must(err)
	res, err := db.Exec(qAcquire, ns, []byte("probe"))
	var ra int64 = -1
	if err == nil {
		ra, _ = res.RowsAffected()
	}
	must(db.QueryRow(qRead, ns, []byte("probe")).Scan(&fence))
	fmt.Printf("PROBE %s RETURNING via Exec: err=%v RowsAffected=%d fence_after=%d (expect 2)\n", drvLabel, err, ra, fence)
	// RETURNING via Query but rows closed without reading: is the write applied?
	_, err = db.Exec(qRelease, ns, []byte("probe"))
	must(err)
	rows, err := db.Query(qAcquire, ns, []byte("probe"))
	must(err)
	rows.Close()
	must(db.QueryRow(qRead, ns, []byte("probe")).Scan(&fence))
	fmt.Printf("PROBE %s RETURNING via Query+Close(unread): fence_after=%d (expect 3)\n", drvLabel, fence)

	// time types
	_, err = db.Exec(`CREATE TABLE tt(i INTEGER, t TEXT, d DATETIME, x)`)
	must(err)
	now := time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600))
	_, err = db.Exec(`INSERT INTO tt VALUES(?,?,?,?)`, now, now, now, now)
	fmt.Printf("PROBE %s time.Time bind err=%v\n", drvLabel, err)
	if err == nil {
		var ti, tt, td, tx string
		var vi, vt, vd, vx string
		must(db.QueryRow(`SELECT typeof(i),typeof(t),typeof(d),typeof(x),CAST(i AS TEXT),CAST(t AS TEXT),CAST(d AS TEXT),CAST(x AS TEXT) FROM tt`).Scan(&ti, &tt, &td, &tx, &vi, &vt, &vd, &vx))
		fmt.Printf("PROBE %s time stored: INTEGER col=%s %q | TEXT col=%s %q | DATETIME col=%s %q | untyped=%s %q\n", drvLabel, ti, vi, tt, vt, td, vd, tx, vx)
		for _, c := range []string{"i", "t", "d", "x"} {
			var got time.Time
			err := db.QueryRow(`SELECT ` + c + ` FROM tt`).Scan(&got)
			var a any
			db.QueryRow(`SELECT ` + c + ` FROM tt`).Scan(&a)
			fmt.Printf("PROBE %s time scan col %s -> time.Time err=%v equal=%v ; as any: %T\n", drvLabel, c, err, err == nil && got.Equal(now), a)
		}
	}
	// int64 unix nanos (what the workload uses) round trip
	var ca int64
	_, err = db.Exec(qInsReq, "s", 0, ns, []byte("n"), "w", "granted", 1, now.UnixNano())
	must(err)
	must(db.QueryRow(`SELECT created_at FROM reqs WHERE session='s'`).Scan(&ca))
	fmt.Printf("PROBE %s created_at int64 roundtrip ok=%v\n", drvLabel, ca == now.UnixNano())
	// blob key round-trip type
	var nsv any
	must(db.QueryRow(`SELECT ns FROM ids WHERE name=?`, []byte("probe")).Scan(&nsv))
	fmt.Printf("PROBE %s BLOB scan into any -> %T\n", drvLabel, nsv)
}
