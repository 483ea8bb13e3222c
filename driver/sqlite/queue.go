package sqlite

import (
	"context"
	"encoding/json"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// Queue implements driver.Driver: the driver itself.
func (d *Driver) Queue() driver.Queue { return d }

// QueuesReady implements driver.Driver on the status reads' connection
// (LockRequestStatuses), with the names as one JSON array (one statement
// prepared once), in ctx without its end, as the listener's looks: in WAL
// mode a read never waits for a lock, and a context that can end costs
// the statement two goroutines that watch it. An idle worker polls every
// five poll intervals.
func (d *Driver) QueuesReady(ctx context.Context, queues []string) ([]string, error) {
	db := d.reader.get(d)
	if db == nil || len(queues) == 0 {
		return d.DB.QueuesReady(ctx, queues)
	}
	list, err := json.Marshal(queues)
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryNamed(context.WithoutCancel(ctx), nil, "queues_ready_json", string(list))
	return sqlbase.ScanNames("queues_ready_json", rows, err)
}
