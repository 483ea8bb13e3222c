package postgres

import (
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/batontest"
)

// TestClaimPlansBigBacklog: every claim statement reads a queue's
// backlog in serving order on the ready index and stops at its limit, in
// its custom and its generic plan, once ANALYZE has seen a backlog of
// 60,000 messages in queues of which one has limits and one is paused.
// Their checks name the queue by the argument: correlated with the
// message's queue, the planner took the check of the queue's row (paused,
// limits) for an anti-join that removes almost every message and chose
// to read and sort the whole backlog (300 ms a claim at 300,000
// messages), and made the per-key claim's check of running keys a hashed
// subplan that read every message.
func TestClaimPlansBigBacklog(t *testing.T) {
	ctx, dsn, d := migrated(t)
	for _, q := range []string{
		`INSERT INTO baton_queues (name, created_at, paused, limits) VALUES
			('big', 0, 0, NULL), ('lim', 0, 0, '{"concurrency":5}'), ('rated', 0, 0, '{"rate":5,"per_ns":1000000000}'),
			('off', 0, 1, NULL)`,
		`INSERT INTO baton_messages (queue, payload, priority, run_at, order_at, attempt, max_attempts, state, created_at)
			SELECT q, '\x7b7d', 0, 0, g, 0, 25, 'R', 0 FROM generate_series(1, 20000) g, (VALUES ('big'), ('lim'), ('rated')) v(q)`,
		"ANALYZE baton_queues", "ANALYZE baton_messages",
	} {
		if _, err := d.SQL.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	c := pgxConn(t, dsn)
	calls := map[string]string{
		"claim_parallel":           "('s1', 0, 1000, 'big', 4, '')",
		"claim_limited_direct":     "('s1', 3, 1000, 'lim', 4, '')",
		"claim_candidates":         "('big', '', 4)",
		"claim_candidates_per_key": "('big', 4)",
		"claim_head":               "('big', 4)",
		"claim_limited_page":       "(0, 'lim', '', -2147483648, -9223372036854775808, -9223372036854775808, 100)",
	}
	for name, args := range calls {
		if _, err := c.Exec(ctx, "PREPARE "+name+" AS "+d.Q(name)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := c.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			rows, err := c.Query(ctx, "EXPLAIN EXECUTE "+name+args, pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			plan := strings.Join(batontest.ScanStrings(t, rows), "\n")
			if !strings.Contains(plan, "Index Scan using baton_messages_ready") || strings.Contains(plan, "Seq Scan on baton_messages") ||
				regexp.MustCompile(`Sort Key: .*priority`).MatchString(plan) {
				t.Errorf("%s (%s) does not read the backlog in order on the ready index:\n%s", name, mode, plan)
			}
		}
	}
}
