package dashboard

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton"
)

// formKey carries a mutation's posted form in its context.
type formKey struct{}

// setLimits is the limits route: the queue page's form sets the queue's
// limits (an empty field: no limit of that kind), or clears them all.
func (d *dash) setLimits(ctx context.Context, q string) (string, error) {
	f, _ := ctx.Value(formKey{}).(url.Values)
	var l baton.QueueLimits
	if f.Get("clear") == "" {
		num := func(name string) (int, error) {
			v := strings.TrimSpace(f.Get(name))
			if v == "" {
				return 0, nil
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("%w: %s %q: give a whole number", baton.ErrInvalid, strings.ReplaceAll(name, "_", " "), v)
			}
			return n, nil
		}
		var err error
		for _, x := range []struct {
			name string
			to   *int
		}{{"concurrency", &l.Concurrency}, {"partition_concurrency", &l.PartitionConcurrency},
			{"rate", &l.Rate}, {"partition_rate", &l.PartitionRate}} {
			if *x.to, err = num(x.name); err != nil {
				return "", err
			}
		}
		l.PartitionBy = strings.TrimSpace(f.Get("partition_by"))
		if per := strings.TrimSpace(f.Get("per")); per != "" && (l.Rate > 0 || l.PartitionRate > 0) {
			if l.Per, err = time.ParseDuration(per); err != nil {
				return "", fmt.Errorf("%w: per %q: give a duration such as 1s or 1m", baton.ErrInvalid, per)
			}
		}
	}
	if err := d.c.SetQueueLimits(ctx, q, l); err != nil {
		return "", err
	}
	if l.IsZero() {
		return "limits of " + q + " removed", nil
	}
	return "limits of " + q + " set", nil
}
