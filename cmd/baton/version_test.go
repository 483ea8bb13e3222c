package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion: --version and the version command print the same lines:
// version, commit, the Go version this binary was built with and every
// linked driver.
func TestVersion(t *testing.T) {
	code, out, errs := run(t, "sqlite::memory:", "version")
	expect(t, code, errs, 0, "")
	code, flagOut, errs := run(t, "sqlite::memory:", "--version")
	expect(t, code, errs, 0, "")
	if out != flagOut {
		t.Fatalf("baton version:\n%s\nbaton --version:\n%s", out, flagOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "baton ") || !strings.HasPrefix(lines[1], "commit: ") {
		t.Fatalf("version output:\n%s", out)
	}
	if !strings.Contains(lines[2], runtime.Version()) {
		t.Fatalf("go line %q lacks %s", lines[2], runtime.Version())
	}
	for _, d := range []string{"postgres (github.com/jackc/pgx/v5 ", "mysql (github.com/go-sql-driver/mysql ", "sqlite ("} {
		if !strings.Contains(lines[3], d) {
			t.Fatalf("drivers line %q lacks %q", lines[3], d)
		}
	}
}

// TestVersionStamped: a build with version control information names its
// commit, and a link-time version wins over the module's.
func TestVersionStamped(t *testing.T) {
	b := buildInfo{Version: "v1.2.3", Commit: "0123abcd", Time: "2026-11-21T12:00:00Z", Modified: true,
		Go: "go1.26.8", Platform: "linux/arm64", CGO: "0",
		Drivers: linkedDrivers([]*debug.Module{{Path: "modernc.org/sqlite", Version: "v1.62.0"}, {Path: "example.com/other", Version: "v1.0.0"}})}
	var s strings.Builder
	b.write(&s)
	want := `baton v1.2.3
commit:  0123abcd 2026-11-21T12:00:00Z (modified)
go:      go1.26.8 linux/arm64 CGO_ENABLED=0
drivers: sqlite (modernc.org/sqlite v1.62.0)
`
	if s.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", s.String(), want)
	}
}

// TestVersionLinkTime: make release's -X main.version wins over the
// module's version.
func TestVersionLinkTime(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v9.9.9"
	if got := readBuildInfo().Version; got != "v9.9.9" {
		t.Fatalf("version %q, want the link-time v9.9.9", got)
	}
}
