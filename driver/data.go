package driver

import "context"

// DataTx is the part of QueueTx (and CallerQueueTx) that reads and writes
// a message's user data, kept in its meta column (a JSON object) under
// the keys "metadata", "tags" and "output".
type DataTx interface {
	// MessageMeta reads the meta column of message id, waiting, running
	// (found in the messages table) or finished (in the history), locking
	// its row until the transaction ends; found is false when there is no
	// such message.
	MessageMeta(ctx context.Context, id int64) (meta string, finished, found bool, err error)
	// MessageSetMeta writes the meta column of message id, in the history
	// when finished; false when there is no such row.
	MessageSetMeta(ctx context.Context, id int64, finished bool, meta string) (bool, error)
	// MessageSetOutput sets the key "output" of a claimed message's meta
	// column to output (JSON), the other keys kept; false when the claim
	// is not current or its message was asked to stop (cancel).
	MessageSetOutput(ctx context.Context, c Claim, output string) (bool, error)
}

// DataFilter selects messages of a listing by their user data.
type DataFilter struct {
	// Tag: only messages that carry this tag ("" for any).
	Tag string
	// MetaKey and MetaValue: only messages whose metadata's top-level key
	// MetaKey holds MetaValue, a string, or a number or boolean as it is
	// written in JSON (MetaKey "" for any).
	MetaKey, MetaValue string
}
