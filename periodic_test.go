package baton_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestScheduleValidation: a bad cron expression, time zone or interval
// fails at registration, naming the field.
func TestScheduleValidation(t *testing.T) {
	c := openDSN(t, "sqlite::memory:")
	for _, x := range []struct {
		s    baton.Schedule
		want string
	}{
		{baton.Schedule{Name: "a", Queue: "q", Cron: "61 * * * *"}, "Cron"},
		{baton.Schedule{Name: "a", Queue: "q", Cron: "* * *"}, "Cron"},
		{baton.Schedule{Name: "a", Queue: "q", Cron: "0 9 * * *", TimeZone: "Mars/Olympus"}, "TimeZone"},
		{baton.Schedule{Name: "a", Queue: "q", Every: time.Microsecond}, "Every"},
		{baton.Schedule{Name: "a", Queue: "q", Every: time.Hour, Cron: "@daily"}, "not both"},
		{baton.Schedule{Name: "a", Queue: "q"}, "Cron or Every"},
		{baton.Schedule{Name: "a b", Queue: "q", Every: time.Hour}, "schedule name"},
		{baton.Schedule{Name: "a", Queue: "", Every: time.Hour}, "queue"},
		{baton.Schedule{Name: "a", Queue: "q", Every: time.Hour, Options: baton.EnqueueOptions{UniqueKey: "k"}}, "UniqueKey"},
		{baton.Schedule{Name: "a", Queue: "q", Cron: "CRON_TZ=Asia/Tokyo 0 9 * * *"}, "TimeZone"},
		// The payload every tick would enqueue is checked as Enqueue
		// checks it, once, here: not refused at every tick.
		{baton.Schedule{Name: "a", Queue: "q", Every: time.Hour, Payload: []byte{}}, "empty Payload"},
		{baton.Schedule{Name: "a", Queue: "q", Every: time.Hour, Payload: make([]byte, 2<<20)}, fmt.Sprintf("more than %d", baton.MaxMessagePayload)},
		{baton.Schedule{Name: "a", Queue: "q", Every: time.Hour, Args: emailArgs{To: strings.Repeat("a", baton.MaxMessagePayload)}}, "more than"},
	} {
		err := c.AddSchedule(x.s)
		wantErr(t, err, baton.ErrInvalid)
		if !strings.Contains(err.Error(), x.want) {
			t.Errorf("%s %s: %v, want it to name %s", x.s.Cron, clipped(x.s.Payload), err, x.want)
		}
	}
	// Registered nothing: the scheduler has no schedule to run.
	if n := baton.ScheduleCount(c); n != 0 {
		t.Fatalf("%d schedules registered by calls that failed", n)
	}
}

// clipped is the start of a payload, for messages.
func clipped(b []byte) string { return string(b[:min(len(b), 20)]) }

// TestScheduleClockOutsideUTC: a schedule without TimeZone reads its cron
// fields in UTC whatever the host's zone: TestScheduleClock again, in a
// process whose local zone is UTC+5:30 (and UTC-5/-4), so that it fails
// on any host if the host's zone leaks in.
func TestScheduleClockOutsideUTC(t *testing.T) {
	t.Parallel()
	for _, zone := range []string{"Asia/Kolkata", "America/New_York"} {
		if _, err := time.LoadLocation(zone); err != nil {
			t.Fatalf("the time zone database has no %s: %v", zone, err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestScheduleClock$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TZ="+zone, "BATON_TEST_TZ="+zone)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("TestScheduleClock with TZ=%s: %v\n%s", zone, err, out)
		}
	}
}

// TestScheduleClock: cron ticks in the schedule's time zone, intervals on
// the epoch.
func TestScheduleClock(t *testing.T) {
	if zone := os.Getenv("BATON_TEST_TZ"); zone != "" {
		// Run by TestScheduleClockOutsideUTC: the zone must have taken.
		if _, off := time.Date(2026, 11, 24, 0, 0, 0, 0, time.Local).Zone(); off == 0 {
			t.Fatalf("TZ=%s did not change the local zone", zone)
		}
	}
	at := time.Date(2026, 11, 24, 7, 30, 0, 0, time.UTC)
	for _, x := range []struct {
		s    baton.Schedule
		want time.Time
	}{
		{baton.Schedule{Cron: "0 9 * * *", TimeZone: "Europe/Paris"}, time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)},
		{baton.Schedule{Cron: "0 9 * * *"}, time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)},
		{baton.Schedule{Cron: "@daily"}, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)},
		// 13:00 in India (UTC+5:30) is 07:30 UTC: the hour there.
		{baton.Schedule{Cron: "@hourly", TimeZone: "Asia/Kolkata"}, time.Date(2026, 11, 24, 7, 30, 0, 0, time.UTC)},
		{baton.Schedule{Every: 45 * time.Minute}, time.Date(2026, 11, 24, 7, 30, 0, 0, time.UTC).Add(0)},
	} {
		// In the local zone, as the scheduler's times (time.Now,
		// time.UnixMicro) are.
		got, err := baton.ScheduleNext(x.s, at.Add(-time.Nanosecond).Local())
		if x.s.Every != 0 {
			got, err = baton.ScheduleNext(x.s, at.Local())
			x.want = time.UnixMicro((at.UnixMicro()/x.s.Every.Microseconds() + 1) * x.s.Every.Microseconds())
		}
		if err != nil || !got.Equal(x.want) {
			t.Errorf("%+v after %v: %v %v, want %v", x.s, at, got, err, x.want)
		}
	}
}

// tickOf reads the tick of a default schedule payload.
func tickOf(t *testing.T, payload []byte) (time.Time, int) {
	var p struct {
		Tick   time.Time `json:"tick"`
		Missed int       `json:"missed"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		t.Fatalf("schedule payload %q: %v", payload, err)
	}
	return p.Tick, p.Missed
}

// childSchedule is a process taking part in a schedule until killed.
func childSchedule(dsn string) {
	c, err := baton.Open(context.Background(), dsn, baton.Options{PollInterval: 20 * time.Millisecond})
	if err == nil {
		err = c.AddSchedule(baton.Schedule{Name: "beat", Queue: "ticks", Every: 250 * time.Millisecond})
	}
	childMust(err)
	childReady("ready")
}

// TestScheduleAcrossProcesses: 4 processes run one schedule; one of them is
// killed (kill -9) half-way; every tick is enqueued once, never twice, and
// the ticks keep coming.
func TestScheduleAcrossProcesses(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		var kids []*exec.Cmd
		for range 4 {
			kids = append(kids, startChildSaying(t, "ready", "schedule", dsn))
		}
		count := func() int64 {
			st, err := c.Stats(ctxT(t), "ticks")
			if err != nil {
				return 0
			}
			return st.Ready + st.Scheduled + st.Retrying
		}
		waitFor(t, "15 ticks", func() bool { return count() >= 15 })
		if err := kids[0].Process.Kill(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "30 ticks", func() bool { return count() >= 30 })
		for _, k := range kids[1:] {
			_ = k.Process.Kill()
		}
		seen := map[time.Time]bool{}
		after := ""
		for {
			ms, next, err := c.ListMessages(ctxT(t), baton.ListOptions{Queue: "ticks", State: baton.StateReady, After: after, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				tick, _ := tickOf(t, m.Payload)
				if seen[tick] {
					t.Fatalf("tick %v enqueued twice", tick)
				}
				if tick.UnixMicro()%(250*time.Millisecond).Microseconds() != 0 {
					t.Fatalf("tick %v is not on the 250ms grid", tick)
				}
				seen[tick] = true
			}
			if after = next; next == "" {
				break
			}
		}
		if len(seen) < 30 {
			t.Fatalf("%d ticks, want at least 30", len(seen))
		}
	})
}

// TestScheduleMissedTicks: after a downtime of several ticks, RunOnce
// enqueues one message for the latest (saying how many were missed) and
// SkipMissed none; the next tick runs as usual.
func TestScheduleMissedTicks(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := b.NewDSN(t)
		for _, policy := range []baton.MissedTicks{baton.RunOnce, baton.SkipMissed} {
			queue := fmt.Sprintf("m%d", policy)
			s := baton.Schedule{Name: queue, Queue: queue, Every: 200 * time.Millisecond, Missed: policy}
			first := openDSN(t, dsn, baton.Options{PollInterval: 20 * time.Millisecond})
			if err := first.AddSchedule(s); err != nil {
				t.Fatal(err)
			}
			// At least one: a look that takes longer than a tick (a
			// loaded machine) may never see the queue at exactly one.
			waitFor(t, "the first tick", func() bool { st, _ := first.Stats(ctxT(t), queue); return st.Ready >= 1 })
			first.RemoveSchedule(queue)
			down := time.Now()
			time.Sleep(time.Second) // the downtime: nobody runs the schedule for 5 ticks
			second := openDSN(t, dsn, baton.Options{PollInterval: 20 * time.Millisecond})
			if err := second.AddSchedule(s); err != nil {
				t.Fatal(err)
			}
			up := time.Now()
			// The first tick after the downtime began: the first client
			// may have enqueued a tick more (before the downtime) while
			// the test looked or as it was removed, and the second runs
			// on after its first.
			var tick, seen time.Time
			var missed int
			waitFor(t, "a tick after the downtime", func() bool {
				ms, _, err := second.ListMessages(ctxT(t), baton.ListOptions{Queue: queue, State: baton.StateReady, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range ms {
					if tk, n := tickOf(t, m.Payload); tk.After(down) && (tick.IsZero() || tk.Before(tick)) {
						tick, missed = tk, n
					}
				}
				seen = time.Now()
				return !tick.IsZero()
			})
			second.RemoveSchedule(queue)
			switch policy {
			case baton.RunOnce:
				// The latest tick due when the second client's scheduler
				// first ran, which may be a little after up: never one
				// still to come when the message was seen.
				if missed < 3 || tick.After(seen) || tick.Before(down) {
					t.Fatalf("RunOnce: the message after the downtime is for %v with %d missed (down %v, seen %v)", tick, missed, down, seen)
				}
			case baton.SkipMissed:
				if missed != 0 || tick.Before(up) {
					t.Fatalf("SkipMissed: the message after the downtime is for %v with %d missed (up %v), want the first tick after it", tick, missed, up)
				}
			}
		}
	})
}

// TestScheduleTickRace: two clients run the same tick of one schedule,
// the second one's transaction reading the last tick before the first
// one's enqueues it and advancing after (a hook puts the first one's whole
// tick there, every time): the compare-and-set on the last tick lets one
// message through, never two. On SQLite the ticks' transactions are
// serialized (BEGIN IMMEDIATE) and no two read the same last tick.
func TestScheduleTickRace(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Name == "sqlite" {
			t.Skip("SQLite serializes the ticks' transactions (BEGIN IMMEDIATE): no two read the same last tick")
		}
		dsn := b.NewDSN(t)
		first, second := openDSN(t, dsn), openDSN(t, dsn)
		// Hourly: the schedulers' own runs enqueue nothing while the test
		// runs its ticks three hours ahead.
		// The hook is process-wide: each backend's subtest has a
		// schedule name of its own.
		name := "race-" + b.Name
		s := baton.Schedule{Name: name, Queue: "race", Every: time.Hour}
		for _, c := range []*baton.Client{first, second} {
			if err := c.AddSchedule(s); err != nil {
				t.Fatal(err)
			}
			if err := baton.RunScheduleAt(ctxT(t), c, name, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		at := time.Now().Add(3 * time.Hour)
		var inner error
		var ran atomic.Int32
		// The hook runs in the second client's tick first; the first's,
		// run inside it, finds ran set.
		baton.BeforeScheduleAdvance(name, func() {
			if !ran.CompareAndSwap(0, 1) {
				return
			}
			inner = baton.RunScheduleAt(ctxT(t), first, name, at)
		})
		defer baton.BeforeScheduleAdvance(name, nil)
		if err := baton.RunScheduleAt(ctxT(t), second, name, at); err != nil {
			t.Fatal(err)
		}
		baton.BeforeScheduleAdvance(name, nil)
		if ran.Load() != 1 || inner != nil {
			t.Fatalf("the first client's tick ran %d times inside the second's, %v", ran.Load(), inner)
		}
		st, err := second.Stats(ctxT(t), "race")
		if err != nil {
			t.Fatal(err)
		}
		if n := st.Ready + st.Scheduled + st.Retrying; n != 1 {
			t.Fatalf("%d messages for one tick run by two clients at once, want 1", n)
		}
	})
}
