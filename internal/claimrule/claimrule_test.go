package claimrule

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func msg(id int64, prio int, key string, due bool) Message {
	return Message{ID: id, Priority: prio, OrderAt: t0.Add(time.Duration(id) * time.Second), Key: key, HasKey: key != "", Due: due}
}

func TestClaimable(t *testing.T) {
	claimed := func(m Message) Message { m.Claimed = true; return m }
	kind := func(m Message, k string) Message { m.Kind = k; return m }
	q := []Message{msg(1, 0, "a", true), msg(2, 0, "a", true), msg(3, -1, "b", true), msg(4, 0, "", false), msg(5, 0, "", true), kind(msg(6, 0, "c", true), "k")}
	for _, tc := range []struct {
		name   string
		mode   Mode
		paused bool
		msgs   []Message
		kind   string
		limit  int
		want   []int64
	}{
		{"parallel in serving order", Parallel, false, q, "", 10, []int64{3, 1, 2, 5, 6}},
		{"parallel limit", Parallel, false, q, "", 2, []int64{3, 1}},
		{"parallel kind", Parallel, false, q, "k", 10, []int64{6}},
		{"paused", Parallel, true, q, "", 10, nil},
		{"ordered stops at the first not due", Ordered, false, q, "", 10, []int64{3, 1, 2}},
		{"ordered limit", Ordered, false, q, "", 1, []int64{3}},
		{"ordered ignores kind", Ordered, false, q, "k", 10, []int64{3, 1, 2}},
		{"ordered with one in flight", Ordered, false, append(slices.Clone(q), claimed(msg(9, 0, "", true))), "", 10, nil},
		{"per-key heads", PerKey, false, q, "", 10, []int64{3, 1, 5, 6}},
		{"per-key key in flight", PerKey, false, append(slices.Clone(q), claimed(msg(9, 0, "a", true))), "", 10, []int64{3, 5, 6}},
		{"per-key head not due holds its key", PerKey, false, []Message{msg(1, 0, "a", false), msg(2, 0, "a", true), msg(3, 0, "", true)}, "", 10, []int64{3}},
		{"no limit", Parallel, false, q, "", 0, nil},
	} {
		if got := Claimable(tc.mode, tc.paused, tc.msgs, tc.kind, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Claimable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDuePrefix(t *testing.T) {
	for _, tc := range []struct {
		due      []time.Duration
		want     []int64
		wantWait time.Duration
	}{
		{nil, nil, 0},
		{[]time.Duration{0, -time.Second, time.Minute, 0}, []int64{1, 2}, 0},
		{[]time.Duration{time.Minute, 0}, nil, time.Minute},
		{[]time.Duration{0, 0}, []int64{1, 2}, 0},
	} {
		heads := []int64{1, 2, 3, 4}[:len(tc.due)]
		got, wait := DuePrefix(heads, tc.due)
		if !slices.Equal(got, tc.want) || wait != tc.wantWait {
			t.Errorf("DuePrefix(%v) = %v, %v; want %v, %v", tc.due, got, wait, tc.want, tc.wantWait)
		}
	}
}

func TestModes(t *testing.T) {
	for m, want := range map[Mode]string{Parallel: "parallel", Ordered: "ordered", PerKey: "per-key", 7: "unknown"} {
		if m.String() != want || m.Valid() != (want != "unknown") {
			t.Errorf("mode %d: %q valid %v", int(m), m.String(), m.Valid())
		}
	}
}
