package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestLocksEscapesNames: baton locks keeps one lock per line and its
// columns whatever the names hold (tabs, newlines, control characters,
// invalid UTF-8), showing such names Go-quoted; --json keeps the exact
// bytes (base64 beside a name that is not UTF-8).
func TestLocksEscapesNames(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		_, s := client(t, dsn)
		ctx := context.Background()
		names := map[string]string{"a\tb": `"a\tb"`, "x\xffy": `"x\xffy"`, "nl\nz\x1b[31m": `"nl\nz\x1b[31m"`, "plain": "plain"}
		for n := range names {
			if _, err := s.Lock(ctx, "ns\tq", baton.Read, 0, n); err != nil {
				t.Fatal(err)
			}
		}
		out := runOK(t, dsn, "locks")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 1+len(names) {
			t.Fatalf("want a header and %d lines:\n%s", len(names), out)
		}
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			// TYPE is two words: LOCKING SERVICE.
			if len(f) < 10 || f[2] != `"ns\tq"` || f[4] != "SHARED" || strings.IndexFunc(l, func(r rune) bool { return r < ' ' || r == utf8.RuneError }) >= 0 {
				t.Fatalf("line %q: want the namespace quoted in its column, no raw tab or control byte", l)
			}
		}
		for n, shown := range names {
			if !strings.Contains(out, "  "+shown+"  ") {
				t.Fatalf("name %q not shown as %s:\n%s", n, shown, out)
			}
		}
		out = runOK(t, dsn, "locks", "--json")
		var rows []struct {
			Namespace, Name string
			NameBase64      string `json:"name_base64"`
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		got := map[string]bool{}
		for _, r := range rows {
			name := r.Name
			if r.NameBase64 != "" {
				raw, err := base64.StdEncoding.DecodeString(r.NameBase64)
				if err != nil || r.Name != names[string(raw)] {
					t.Fatalf("name %q, name_base64 %q: want the quoted form beside the exact bytes", r.Name, r.NameBase64)
				}
				name = string(raw)
			}
			if r.Namespace != "ns\tq" {
				t.Fatalf("namespace %q in JSON, want the exact string", r.Namespace)
			}
			got[name] = true
		}
		for n := range names {
			if !got[n] {
				t.Fatalf("JSON lacks name %q exactly: %s", n, out)
			}
		}
	})
}
