package baton

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	mq "github.com/batonhq/baton/internal/queue"
)

// Jobs as data: a message's user metadata and tags (EnqueueOptions), the
// output its handler records (Message.SetOutput), UpdateMessage, and
// unique keys derived from the arguments (EnqueueOptions.UniqueByArgs).
// All of it lives in the message's meta column, so a message without it
// costs what it did.

// The bounds of a message's user data.
const (
	// MaxMetadata is the largest metadata object, in bytes of JSON.
	MaxMetadata = mq.MaxMetadata
	// MaxOutput is the largest recorded output, in bytes of JSON.
	MaxOutput = mq.MaxOutput
	// MaxTags is the most tags a message may carry.
	MaxTags = mq.MaxTags
)

// SetOutput records v, encoded as JSON (at most MaxOutput bytes), as the
// output of the message's run: when the handler then succeeds, the
// output is kept with the completed message in the history, where
// Message, ListMessages, `baton queue get` and the dashboard show it. A
// failed, retried, snoozed or cancelled run keeps none. Call it from the
// handler, before it returns (or before CompleteTx); a later call
// replaces the output, nil removes it. A value that does not encode or is
// too large is an error wrapping ErrInvalid, and the output is left as it
// was. With a negative Retention.Completed nothing is kept.
func (m *Message) SetOutput(v any) error {
	if v == nil {
		m.output = nil
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: message %d: the output does not encode: %v", ErrInvalid, m.ID, err)
	}
	if err := mq.CheckOutput(b); err != nil {
		return fmt.Errorf("message %d: %w", m.ID, err)
	}
	m.output = b
	return nil
}

// MessageUpdate is a change to a message's user data (UpdateMessage).
type MessageUpdate struct {
	// Metadata is merged into the message's metadata as a JSON merge
	// patch (RFC 7396): a key set to null is removed, a key whose value
	// is an object is merged key by key, any other value replaces the
	// key's, and keys not named are kept. It must be a JSON object; the
	// merged metadata must fit in MaxMetadata bytes.
	Metadata json.RawMessage
}

// UpdateMessage changes the metadata of message id, whether it waits,
// runs or has finished (while its history is kept): atomically, so
// concurrent updates of different keys all hold. A running message's
// handler keeps the Message it was given (its Metadata is not changed in
// memory). ErrNotFound when there is no such message.
func (c *Client) UpdateMessage(ctx context.Context, id int64, u MessageUpdate) error {
	return c.mq.UpdateMetadata(ctx, id, u.Metadata)
}

// UpdateMessageTx is UpdateMessage in the caller's transaction tx (a
// *sql.Tx, or a pgx transaction through postgres.PgxTx): the change
// happens if and only if tx commits, and the message's row stays locked
// until then.
func (c *Client) UpdateMessageTx(ctx context.Context, tx Execer, id int64, u MessageUpdate) error {
	cq, err := callerQueue(c.mq, tx, "UpdateMessageTx", "")
	if err != nil {
		return err
	}
	return cq.UpdateMetadata(ctx, id, u.Metadata)
}

// uniqueByArgs turns o.UniqueByArgs into the unique key it derives from
// args (whose JSON is payload): from the fields tagged `baton:"unique"`
// when the arguments' struct has some, from all of them otherwise.
func uniqueByArgs(o *EnqueueOptions, args JobArgs, payload []byte) error {
	if !o.UniqueByArgs {
		return nil
	}
	if o.UniqueKey != "" {
		return fmt.Errorf("%w: kind %q: give a unique key or unique by arguments, not both", ErrInvalid, o.Kind)
	}
	part, err := uniqueFields(args)
	if err != nil {
		return fmt.Errorf("%w: kind %q: %v", ErrInvalid, o.Kind, err)
	}
	if part == nil {
		part = payload
	}
	o.UniqueKey, o.UniqueByArgs = mq.ArgsKey(o.Kind, part), false
	return nil
}

// uniqueFields is the JSON object of the fields of args' struct tagged
// `baton:"unique"`, under their JSON names; nil when none is tagged.
func uniqueFields(args JobArgs) ([]byte, error) {
	v := reflect.ValueOf(args)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, nil
	}
	fields := map[string]any{}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !slices.Contains(strings.Split(f.Tag.Get("baton"), ","), "unique") {
			continue
		}
		if !f.IsExported() {
			return nil, fmt.Errorf("field %s is tagged unique but is not exported", f.Name)
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			name = f.Name
		}
		fields[name] = v.Field(i).Interface()
	}
	if len(fields) == 0 {
		return nil, nil
	}
	return json.Marshal(fields)
}
