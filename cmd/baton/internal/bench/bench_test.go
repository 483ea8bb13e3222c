package bench

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary play the child of handoff_process.
func TestMain(m *testing.M) {
	if dsn := os.Getenv("BATON_BENCH_TEST_CHILD"); dsn != "" {
		if err := ServeChild(context.Background(), dsn, os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestDSNs(t *testing.T) {
	for in, want := range map[string]string{
		"mysql://root@127.0.0.1:3306/test":         "root@tcp(127.0.0.1:3306)/test?interpolateParams=true",
		"mariadb://u:p%40ss@db:3307/app?tls=false": "u:p@ss@tcp(db:3307)/app?interpolateParams=true&tls=false",
	} {
		got, err := MySQLDriverDSN(in)
		if err != nil || got != want {
			t.Errorf("MySQLDriverDSN(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"sqlite:x.db": "sqlite", "postgresql://h/db": "postgres", "mariadb://h/db": "mysql",
	} {
		if got, err := BackendOf(in); err != nil || got != want {
			t.Errorf("BackendOf(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := BackendOf("redis://h"); err == nil {
		t.Error("BackendOf(redis://) gave no error")
	}
	if got := redact("postgres://u:secret@h:bad/db"); strings.Contains(got, "secret") {
		t.Errorf("redact left the password in %q", got)
	}
	if err := CheckServer("sqlite", "sqlite::memory:"); err == nil {
		t.Error("CheckServer accepted sqlite::memory:")
	}
	if _, err := Run(context.Background(), Config{Backend: "oracle"}); err == nil {
		t.Error("Run with an unknown backend gave no error")
	}
}

// TestRunSQLite runs every SQLite case briefly, the child being this test
// binary. It checks the records' shape, never their timings.
func TestRunSQLite(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seen []string
	recs, err := Run(ctx, Config{
		Backend:  "sqlite",
		Server:   "sqlite:" + t.TempDir() + "/named.db",
		Duration: 200 * time.Millisecond,
		Progress: func(name string) { seen = append(seen, name) },
		Child: func(dsn string) *exec.Cmd {
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), "BATON_BENCH_TEST_CHILD="+dsn)
			return cmd
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(Cases) || len(seen) != len(Cases) {
		t.Fatalf("got %d records and %d progress calls for %d cases: %+v", len(recs), len(seen), len(Cases), recs)
	}
	for i, r := range recs {
		if r.Name != Cases[i] || r.Backend != "sqlite" || r.Ops < minRounds || r.P50us <= 0 || r.P99us < r.P50us ||
			r.OpsPerSec <= 0 || r.Baseline != "" || r.Ratio != 0 {
			t.Errorf("record %d: %+v", i, r)
		}
	}
}
