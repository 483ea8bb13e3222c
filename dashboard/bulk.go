package dashboard

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/batonhq/baton"
)

// bulkDone says what each bulk action did.
var bulkDone = map[baton.BulkAction]string{
	baton.BulkCancel: "cancelled (running ones asked to stop)",
	baton.BulkDelete: "deleted",
	baton.BulkRetry:  "retried, due now under their ids",
}

// bulk is the action of a queue's bulk form: action (cancel, delete,
// retry) on the queue's messages of a state ("" for every state the
// action applies to), a kind ("" for any) and older than a duration (""
// for any age).
func (d *dash) bulk(ctx context.Context, q string) (string, error) {
	form, _ := ctx.Value(formKey{}).(url.Values)
	action := baton.BulkAction(form.Get("action"))
	f := baton.MessageFilter{Queue: q, Kind: form.Get("kind")}
	if s := form.Get("state"); s != "" {
		f.States = []baton.MessageState{baton.MessageState(s)}
	}
	if a := form.Get("older_than"); a != "" {
		age, err := time.ParseDuration(a)
		if err != nil {
			return "", fmt.Errorf("%w: older than %q: give a duration such as 90m or 24h", baton.ErrInvalid, a)
		}
		f.OlderThan = age
	}
	n, err := d.c.Bulk(ctx, action, f)
	return fmt.Sprintf("%d messages of %s %s", n, q, bulkDone[action]), err
}
