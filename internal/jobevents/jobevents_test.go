package jobevents

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEncodeSplits: events are split into payloads of at most MaxPayload
// bytes that decode back to every event, in order; error texts are cut
// to MaxError bytes on a rune boundary.
func TestEncodeSplits(t *testing.T) {
	long := strings.Repeat("é", 1000)
	var evs []Event
	for i := 0; i < 500; i++ {
		evs = append(evs, New(int64(i), "queue", "kind", "failed", 1, long))
	}
	if e := evs[0].Error; len(e) > MaxError || !utf8.ValidString(e) || !strings.HasSuffix(e, "…") {
		t.Fatalf("error cut to %d bytes: %q", len(e), e)
	}
	payloads := Encode(evs)
	if len(payloads) < 2 {
		t.Fatalf("500 events in %d payloads", len(payloads))
	}
	var back []Event
	for _, p := range payloads {
		if len(p) > MaxPayload {
			t.Fatalf("payload of %d bytes", len(p))
		}
		got, err := Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, got...)
	}
	if len(back) != len(evs) {
		t.Fatalf("%d events back of %d", len(back), len(evs))
	}
	for i := range evs {
		if back[i] != evs[i] {
			t.Fatalf("event %d: %+v, sent %+v", i, back[i], evs[i])
		}
	}
	if Encode(nil) != nil {
		t.Fatal("no event, yet a payload")
	}
}
