package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/benchq"
	"github.com/batonhq/baton/internal/benchrec"
)

// limitRounds is how many times drain_limited and drain_rated alternate
// the unlimited and the limited drain; each reports the medians.
const limitRounds = 3

// drainLimitedCase is drain_limited or drain_rated: the drain of drain_N
// with limits that are not the bottleneck (on sc), alternated with the
// same drain without limits (in a scratch database of its own, the
// baseline), limitRounds times, each drain on a queue of its own; the
// records are the medians.
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
	var baseline, limited []Record
	drain := func(s *scratch, queue string, l baton.QueueLimits, into *[]Record) error {
		_, err := withClients(ctx, s, 1, func(cs []*baton.Client) ([]Record, error) {
			n, elapsed, err := benchq.DrainLimited(ctx, cs[0], queue, cfg.Messages, cfg.Workers, cfg.Duration, l)
			*into = append(*into, benchrec.NewThroughputRecord(name, cfg.Backend, n, elapsed))
			return nil, err
		})
		return err
	}
	for i := range limitRounds {
		q := fmt.Sprintf("drain%d", i)
		if err := drain(base, q, baton.QueueLimits{}, &baseline); err != nil {
			return nil, err
		}
		if err := drain(sc, q, l, &limited); err != nil {
			return nil, err
		}
	}
	rec := medianRecord(limited)
	rec.WithThroughputBaseline(CaseDrainN, medianRecord(baseline).OpsPerSec)
	return []Record{rec}, nil
}

// medianRecord is the record of the median throughput.
func medianRecord(recs []Record) Record {
	slices.SortFunc(recs, func(a, b Record) int {
		switch {
		case a.OpsPerSec < b.OpsPerSec:
			return -1
		case a.OpsPerSec > b.OpsPerSec:
			return 1
		}
		return 0
	})
	return recs[len(recs)/2]
}
