package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
)

// TestProgressOnlyOnTerminal: migrate, redrive and purge print a progress
// line on stderr when it is a terminal, and nothing when it is not.
func TestProgressOnlyOnTerminal(t *testing.T) {
	dsn := batontest.SQLiteDSN(t)
	for _, args := range [][]string{{"migrate"}, {"queue", "push", "mail", "x"}, {"queue", "redrive", "mail"}, {"queue", "purge", "mail"}} {
		code, _, errs := run(t, dsn, args...)
		expect(t, code, errs, 0, "")
		if errs != "" {
			t.Fatalf("%v wrote to a stderr that is not a terminal: %q", args, errs)
		}
	}
	// script gives the command a terminal; it is part of every Linux
	// base system (Debian's bsdutils) and .ci/run makes sure of it: a
	// machine without it fails here, never skips the check.
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script (Debian's bsdutils, util-linux elsewhere) gives the command a terminal and is not installed: %v", err)
	}
	dsn2 := batontest.SQLiteDSN(t)
	for cmdline, want := range map[string]string{
		bin + " --dsn " + dsn2 + " migrate":           "migrate: applying ",
		bin + " --dsn " + dsn + " queue redrive mail": "queue redrive mail: moving dead letters back",
		bin + " --dsn " + dsn + " queue purge mail":   "queue purge mail: deleting dead letters",
	} {
		out, err := exec.Command(script, "-qec", cmdline, "/dev/null").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmdline, err, out)
		}
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "\r\x1b[K") {
			t.Fatalf("%s on a terminal: no progress line %q in %q", cmdline, want, out)
		}
	}
}

// TestCompletion: the shells' completion scripts are generated.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_baton", "zsh": "#compdef baton", "fish": "complete -c baton"} {
		code, out, errs := run(t, "sqlite::memory:", "completion", shell)
		expect(t, code, errs, 0, "")
		if !strings.Contains(out, want) {
			t.Fatalf("completion %s lacks %q", shell, want)
		}
	}
}
