package bench

import (
	"context"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/benchq"
	"github.com/batonhq/baton/internal/benchrec"
)

// drainLimitedCase is drain_limited or drain_rated: the drain of
// drain_N, first without limits in a scratch database of its own (the
// baseline), then on sc with limits that are not the bottleneck.
func drainLimitedCase(ctx context.Context, cfg QueueConfig, sc *scratch, name string) ([]Record, error) {
	l := baton.QueueLimits{Concurrency: 1000}
	if name == CaseDrainRated {
		l = baton.QueueLimits{Rate: 10_000_000, Per: time.Second}
	}
	base, err := migratedScratch(ctx, cfg.Backend, cfg.Server)
	if err != nil {
		return nil, err
	}
	defer base.drop()
	var baseline float64
	if _, err := withClients(ctx, base, 1, func(cs []*baton.Client) ([]Record, error) {
		n, elapsed, err := benchq.Drain(ctx, cs[0], "drain", cfg.Messages, cfg.Workers, cfg.Duration)
		baseline = benchrec.NewThroughputRecord("", "", n, elapsed).OpsPerSec
		return nil, err
	}); err != nil {
		return nil, err
	}
	recs, err := withClients(ctx, sc, 1, func(cs []*baton.Client) ([]Record, error) {
		n, elapsed, err := benchq.DrainLimited(ctx, cs[0], "drain", cfg.Messages, cfg.Workers, cfg.Duration, l)
		if err != nil {
			return nil, err
		}
		return []Record{benchrec.NewThroughputRecord(name, cfg.Backend, n, elapsed)}, nil
	})
	if err != nil {
		return nil, err
	}
	recs[0].WithThroughputBaseline(CaseDrainN, baseline)
	return recs, nil
}
