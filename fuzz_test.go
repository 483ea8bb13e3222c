package baton_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton"
)

// FuzzParseTable: any input is either refused with ErrInvalid or turned
// into a canonical name that quoting part by part gives back unchanged, so
// nothing a user writes can smuggle SQL into a trigger.
func FuzzParseTable(f *testing.F) {
	for _, s := range []string{"orders", "app.orders", `"Odd Table-1"`, `"a"."b"`, `"x""y"`, `a.b.c`, `"unterminated`, `x;drop table y`, "", `"é ü"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := baton.ParseTable(in)
		if err != nil {
			if !errors.Is(err, baton.ErrInvalid) {
				t.Fatalf("ParseTable(%q): error %v does not wrap ErrInvalid", in, err)
			}
			return
		}
		if !utf8.ValidString(got) || strings.ContainsAny(got, "\"\x00") {
			t.Fatalf("ParseTable(%q) = %q", in, got)
		}
		parts := strings.Split(got, ".")
		quoted := make([]string, len(parts))
		for i, p := range parts {
			quoted[i] = `"` + p + `"`
		}
		again, err := baton.ParseTable(strings.Join(quoted, "."))
		if err != nil || again != got {
			t.Fatalf("ParseTable(%q) = %q; quoted again: %q, %v", in, got, again, err)
		}
	})
}

// FuzzNames: lock and queue names are accepted exactly when they are 1 to
// 64 characters (locks; an invalid byte counts as one) and never make
// validation panic.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"job", "", strings.Repeat("x", 64), strings.Repeat("x", 65), "a b", "<script>", "\x00", "é", strings.Repeat("é", 64), strings.Repeat("é", 65), strings.Repeat("\xff", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		err := baton.ValidateName("lock name", in)
		if ok := in != "" && utf8.RuneCountInString(in) <= 64; ok != (err == nil) {
			t.Fatalf("ValidateName(%q) = %v", in, err)
		}
		if err != nil && !errors.Is(err, baton.ErrWrongName) {
			t.Fatalf("ValidateName(%q): %v does not wrap ErrWrongName", in, err)
		}
		if err := baton.ValidateQueue(in); err != nil && !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("ValidateQueue(%q): %v does not wrap ErrInvalid", in, err)
		}
	})
}

// FuzzPayload: any payload comes back from the queue byte for byte
// (embedded SQLite; the conformance suite covers the servers).
func FuzzPayload(f *testing.F) {
	for _, s := range [][]byte{nil, []byte("x"), []byte("\x00\xff'\";--"), []byte(`{"a":1}`), bytes.Repeat([]byte{0xfe}, 1000)} {
		f.Add(s)
	}
	c, err := baton.Open(context.Background(), "sqlite:"+filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	s, err := c.NewSession(context.Background())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Enqueue(ctx, "fuzz", payload)
		if len(payload) == 0 {
			if !errors.Is(err, baton.ErrInvalid) {
				t.Fatalf("empty payload: %v, want ErrInvalid", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		ms, err := s.Claim(ctx, "fuzz", baton.ClaimOptions{Max: 1})
		if err != nil || len(ms) != 1 {
			t.Fatalf("claim: %v", err)
		}
		if !bytes.Equal(ms[0].Payload, payload) {
			t.Fatalf("payload %q came back as %q", payload, ms[0].Payload)
		}
		if err := s.Ack(ctx, ms[0]); err != nil {
			t.Fatal(err)
		}
	})
}
