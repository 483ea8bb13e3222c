package queue

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/batonhq/baton/internal/errs"
)

// Clock parses a schedule's timing (a cron expression in a time zone, or
// an interval) into its next-tick function; name is the schedule's, for
// the errors.
func Clock(name, expr, zone string, every time.Duration) (func(time.Time) time.Time, error) {
	switch {
	case expr != "" && every != 0:
		return nil, fmt.Errorf("%w: schedule %q: give Cron or Every, not both", errs.ErrInvalid, name)
	case every != 0:
		return everyClock(name, zone, every)
	case expr == "":
		return nil, fmt.Errorf("%w: schedule %q: give Cron or Every", errs.ErrInvalid, name)
	}
	return cronClock(name, expr, zone)
}

// everyClock ticks at every multiple of the interval since the Unix epoch.
func everyClock(name, zone string, every time.Duration) (func(time.Time) time.Time, error) {
	if every < time.Millisecond {
		return nil, fmt.Errorf("%w: schedule %q: Every %v: give at least 1ms", errs.ErrInvalid, name, every)
	}
	if zone != "" {
		return nil, fmt.Errorf("%w: schedule %q: TimeZone applies to Cron only", errs.ErrInvalid, name)
	}
	us := every.Microseconds()
	return func(t time.Time) time.Time { return time.UnixMicro((t.UnixMicro()/us + 1) * us) }, nil
}

// location loads a schedule's time zone (UTC when "").
func location(name, zone string) (*time.Location, error) {
	if zone == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("%w: schedule %q: TimeZone %q: %v", errs.ErrInvalid, name, zone, err)
	}
	return loc, nil
}

// cronClock ticks by a cron expression of five fields or a descriptor, in
// zone (UTC when "").
func cronClock(name, expr, zone string) (func(time.Time) time.Time, error) {
	loc, err := location(name, zone)
	if err != nil {
		return nil, err
	}
	if f := strings.Fields(expr); len(f) > 0 && (strings.HasPrefix(f[0], "TZ=") || strings.HasPrefix(f[0], "CRON_TZ=")) {
		return nil, fmt.Errorf("%w: schedule %q: Cron %q: give the time zone in TimeZone", errs.ErrInvalid, name, expr)
	}
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	sched, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: schedule %q: Cron %q: %v", errs.ErrInvalid, name, expr, err)
	}
	// The parser reads the fields in the host's zone (time.Local) unless
	// told otherwise: hosts in different zones would tick differently.
	if spec, ok := sched.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	return sched.Next, nil
}
