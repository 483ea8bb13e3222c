package queue

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/errs"
)

// TestPollDue: a queue that stays due wakes its consumers on the first
// poll of the run and then every pollRetake-th.
func TestPollDue(t *testing.T) {
	var p queuePoll
	var got [][]string
	for _, ready := range [][]string{{"a"}, {"a", "b"}, {"a", "b"}, {"b"}, {"a"}} {
		got = append(got, p.due(ready))
	}
	want := [][]string{{"a"}, {"b"}, {"a"}, {"b"}, {"a"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("woke %v, want %v", got, want)
	}
}

// TestClockAndLatestTick: an interval ticks on its multiples since the
// epoch; the latest due tick counts the ones it passed over; bad timings
// are ErrInvalid.
func TestClockAndLatestTick(t *testing.T) {
	next, err := Clock("s", "", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	last := time.Date(2030, 1, 1, 10, 30, 0, 0, time.UTC)
	if n := next(last); !n.Equal(time.Date(2030, 1, 1, 11, 0, 0, 0, time.UTC)) {
		t.Fatalf("next tick %v", n)
	}
	latest, missed := LatestTick(next, last, last.Add(3*time.Hour+time.Minute))
	if !latest.Equal(time.Date(2030, 1, 1, 13, 0, 0, 0, time.UTC)) || missed != 2 {
		t.Fatalf("latest %v, missed %d", latest, missed)
	}
	if latest, _ := LatestTick(next, last, last.Add(time.Minute)); !latest.IsZero() {
		t.Fatalf("a tick before its time: %v", latest)
	}
	for _, bad := range []struct {
		expr, zone string
		every      time.Duration
	}{{"", "", 0}, {"@hourly", "", time.Hour}, {"", "UTC", time.Hour}, {"", "", time.Microsecond},
		{"CRON_TZ=UTC 0 * * * *", "", 0}, {"0 * * *", "", 0}, {"@daily", "Nowhere/City", 0}} {
		if _, err := Clock("s", bad.expr, bad.zone, bad.every); !errors.Is(err, errs.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
}
