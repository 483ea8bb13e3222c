// Package bench measures baton's locks against the database's own locking
// primitive, side by side in the same run, and returns the figures as
// records. `baton bench locks` prints them; docs/benchmarks.md explains
// every case.
//
// Each run works in a scratch database of its own (a temporary file on
// SQLite, a new schema on PostgreSQL, a new database on MySQL/MariaDB) that
// is dropped at the end, so it never touches an application's data and
// several runs can share a server.
//
// The cases:
//
//   - lock_pair: uncontended Lock(write, timeout 0) + Release on one
//     session and one name; ops_per_sec is pairs per second and the
//     latencies are per pair. Baseline: pg_advisory_lock + pg_advisory_unlock
//     (PostgreSQL), GET_LOCK(name, 0) + RELEASE_LOCK (MySQL/MariaDB), each on
//     one dedicated connection. ratio = baton ops/s ÷ baseline ops/s.
//   - reenter: a user-level lock (MySQL's GET_LOCK semantics, each
//     success one more instance) taken twice and released twice, one
//     instance at a time, on one session and one name; ops_per_sec is
//     cycles per second. Baseline: the native lock taken twice and
//     released twice on one connection (both are re-entrant); ratio as
//     for lock_pair.
//   - handoff: one client holds a write lock, a second client waits for it
//     with no timeout; the latency runs from the holder's call to Release to
//     the moment the waiter's Lock returns. Baseline: the same with the
//     native blocking lock on two connections. ratio = baton p50 ÷ baseline
//     p50, so above 1 means slower than native.
//   - handoff_process: handoff with the waiter in a child process
//     (Config.Child), timed with the wall clock of both processes. SQLite
//     and MySQL wake clients of the same process directly, so this is their
//     figure for separate processes. Its baseline is the one the handoff
//     case measured.
//   - contend8: 8 sessions over 2 clients loop Lock(write, forever) +
//     Release on one name; ops_per_sec is acquisitions per second, the
//     latencies are wait + hold per acquisition, both counted after a
//     500 ms warm-up. Baseline: the native blocking lock looped on 8
//     connections, after the same warm-up; ratio as for lock_pair.
//   - deadlock_detect: two sessions form a 2-cycle; the latency runs from
//     the call that closes the cycle (a read request) to its ErrDeadlock.
//
// For the latency cases (handoff, handoff_process, deadlock_detect)
// ops_per_sec is 1 ÷ the mean measured latency.
package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/benchrec"
)

// Record is the result of one benchmark case on one backend.
type Record = benchrec.Record

// Case names, in the order Run runs them.
const (
	CaseLockPair       = "lock_pair"
	CaseHandoff        = "handoff"
	CaseHandoffProcess = "handoff_process"
	CaseHandoffWaited  = "handoff_waited"
	CaseHandoffTable   = "handoff_table"
	CaseContend8       = "contend8"
	CaseReaders8       = "readers8"
	CaseDeadlockDetect = "deadlock_detect"
	CaseMulti10        = "multi10"
	CaseTryHeld        = "try_held"
	CaseReenter        = "reenter"
)

// Cases lists every case name in run order.
var Cases = []string{CaseLockPair, CaseMulti10, CaseTryHeld, CaseReenter, CaseHandoff, CaseHandoffProcess, CaseHandoffWaited, CaseHandoffTable, CaseContend8, CaseReaders8, CaseDeadlockDetect}

// Backends lists the backend names Run accepts.
var Backends = []string{"sqlite", "postgres", "mysql"}

// Config says what to measure and where.
type Config struct {
	// Backend is sqlite, postgres or mysql.
	Backend string
	// Server is the DSN of the server the scratch database is created in
	// (postgres:// or mysql://). For sqlite it is optional: a file DSN
	// whose directory receives the scratch file (default: the system's
	// temporary directory). Nothing outside the scratch file, schema or
	// database is written; the baselines take only session-level locks.
	Server string
	// Duration is roughly how long each case runs (default 3s): lock_pair,
	// handoff and contend8 give half to baton and half to the baseline
	// (all of it to baton where there is none), and the round-based cases
	// stop early when they reach their share.
	Duration time.Duration
	// Only, when not empty, restricts the run to these case names.
	Only []string
	// Progress, when set, is called with a case's name as it starts.
	Progress func(caseName string)
	// Child returns a command that runs ServeChild in another process with
	// the given baton DSN on its stdin and stdout. Without it the
	// handoff_process case is skipped.
	Child func(dsn string) *exec.Cmd
}

const (
	// handoffRounds and deadlockRounds are the rounds the round-based
	// cases aim for; they stop earlier at Config.Duration.
	handoffRounds  = 200
	deadlockRounds = 30
	// minRounds are always run, whatever the duration, so that a slow
	// path still yields percentiles.
	minRounds = 5
	// settle is how long a round lets a waiter that is visibly queued
	// reach its blocking wait before the holder releases.
	settle = 3 * time.Millisecond
	// waitedSettle is handoff_waited's: past the first 25 ms behind a
	// turnstile, after which only a waiter that holds nothing else waits
	// on there (the others wait in the table).
	waitedSettle = 100 * time.Millisecond
	// ns is the lock namespace every baton case uses.
	ns = "bench"
)

// Run runs the cases on the backend and returns their records. Cases that
// fail are reported in the error (all failures joined) and leave no record;
// the others still return theirs. A baseline that fails leaves its record
// without baseline figures.
func Run(ctx context.Context, cfg Config) ([]Record, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	// Migrated up front: a backend that cannot start fails the run with
	// one error instead of one per case, and migrations are not timed.
	sc, err := migratedScratch(ctx, cfg.Backend, cfg.Server)
	if err != nil {
		return nil, err
	}
	defer sc.drop()

	r := &runner{cfg: cfg, sc: sc}
	var names []string
	for _, name := range Cases {
		if (len(cfg.Only) == 0 || slices.Contains(cfg.Only, name)) && r.caseFunc(name) != nil {
			names = append(names, name)
		}
	}
	return runCases(ctx, cfg.Backend, names, cfg.Progress, func(name string) ([]Record, error) {
		rec, err := r.caseFunc(name)(ctx)
		if rec == nil {
			return nil, err
		}
		return []Record{*rec}, err
	})
}

// runCases runs the named cases in order until ctx ends, telling progress
// (when set) which one runs; a case's failure is recorded and the next
// case runs.
func runCases(ctx context.Context, backend string, names []string, progress func(string), run func(name string) ([]Record, error)) ([]Record, error) {
	var out []Record
	var errs []error
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			if len(errs) == 0 {
				errs = append(errs, err)
			}
			break
		}
		if progress != nil {
			progress(name)
		}
		recs, err := run(name)
		out = append(out, recs...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s on %s: %w", name, backend, err))
		}
	}
	return out, errors.Join(errs...)
}

// fill checks the configuration and sets its defaults.
func (cfg *Config) fill() error {
	if !slices.Contains(Backends, cfg.Backend) {
		return fmt.Errorf("bench: unknown backend %q (use sqlite, postgres or mysql)", cfg.Backend)
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	for _, c := range cfg.Only {
		if !slices.Contains(Cases, c) {
			return fmt.Errorf("bench: unknown case %q", c)
		}
	}
	return nil
}

type runner struct {
	cfg Config
	sc  *scratch
	// nativeHandoff is the baseline measured by the handoff case, which
	// handoff_process reuses.
	nativeHandoff *benchrec.Stats
}

// caseFunc returns the function of a case, or nil when the case does not
// apply to the backend.
func (r *runner) caseFunc(name string) func(context.Context) (*Record, error) {
	switch name {
	case CaseLockPair:
		return r.lockPair
	case CaseMulti10:
		return r.multi10
	case CaseTryHeld:
		return r.tryHeld
	case CaseReenter:
		return r.reenter
	case CaseHandoff:
		return r.handoff
	case CaseHandoffProcess:
		if r.cfg.Child == nil {
			return nil
		}
		return r.handoffProcess
	case CaseHandoffWaited:
		return r.handoffWaited
	case CaseHandoffTable:
		return r.handoffTable
	case CaseContend8:
		return r.contend8
	case CaseReaders8:
		return r.readers8
	case CaseDeadlockDetect:
		return r.deadlockDetect
	}
	return nil
}
