package queue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/txn"
)

// Jobs as data: a message's user metadata (a JSON object), its tags and
// the output its handler recorded live in its meta column under the keys
// "metadata", "tags" and "output" (Meta), so that they go wherever the
// message goes (retries, the history, re-drives) and cost nothing to a
// message without them.

// The bounds of a message's data (baton.MaxMetadata, MaxOutput, MaxTags):
// with the trace context, all of it fits in the meta column's 64 KiB on
// MySQL (TEXT), even as MySQL's JSON functions space it out.
const (
	MaxMetadata = 16 << 10
	MaxOutput   = 16 << 10
	MaxTags     = 20
)

// checkData validates the metadata and tags of a message to enqueue.
func (o Options[S]) checkData() error {
	if err := CheckMetadata(o.Metadata); err != nil {
		return err
	}
	return CheckTags(o.Tags)
}

// CheckMetadata checks user metadata: a JSON object of at most MaxMetadata
// bytes (nil or empty: none).
func CheckMetadata(md []byte) error {
	if len(md) == 0 {
		return nil
	}
	if len(md) > MaxMetadata {
		return fmt.Errorf("%w: metadata is %d bytes, more than %d", errs.ErrInvalid, len(md), MaxMetadata)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(md, &obj); err != nil || obj == nil {
		return fmt.Errorf("%w: metadata %s: give a JSON object", errs.ErrInvalid, errs.Quote(clip(md)))
	}
	return nil
}

// clip is the start of b, for an error message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// CheckTags checks a message's tags: at most MaxTags, each 1 to 64
// letters, digits, '_', '.', ':' or '-'.
func CheckTags(tags []string) error {
	if len(tags) > MaxTags {
		return fmt.Errorf("%w: %d tags, more than %d", errs.ErrInvalid, len(tags), MaxTags)
	}
	for _, t := range tags {
		if err := ValidateName("tag", t); err != nil {
			return err
		}
	}
	return nil
}

// NormalTags is a set of tags as stored: sorted, without duplicates; nil
// for none.
func NormalTags(tags []string) []string {
	if len(tags) == 0 {
		return nil
	}
	out := slices.Clone(tags)
	slices.Sort(out)
	return slices.Compact(out)
}

// CheckOutput checks a handler's recorded output: JSON of at most
// MaxOutput bytes.
func CheckOutput(out []byte) error {
	if len(out) > MaxOutput {
		return fmt.Errorf("%w: output is %d bytes, more than %d", errs.ErrInvalid, len(out), MaxOutput)
	}
	if !json.Valid(out) {
		return fmt.Errorf("%w: output %s is not JSON", errs.ErrInvalid, errs.Quote(clip(out)))
	}
	return nil
}

// ArgsKey is the unique key derived from a message's arguments (its
// payload, of its kind): "args:" and the SHA-256, in hex, of the kind and
// the payload's canonical JSON (objects' keys sorted, no spaces), or of
// the payload's bytes when it is not JSON. Equal arguments of one kind
// give one key, whatever their keys' order.
func ArgsKey(kind string, payload []byte) string {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(Canonical(payload))
	return "args:" + hex.EncodeToString(h.Sum(nil))
}

// Canonical is JSON b in canonical form: objects' keys sorted, no
// insignificant space, numbers as written; b itself when it is not JSON.
func Canonical(b []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// MergePatch applies patch to the JSON object target as a JSON merge
// patch (RFC 7396): a key set to null is removed, an object merged key by
// key, any other value replaces the key's.
func MergePatch(target, patch json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(patch, &p); err != nil || p == nil {
		// Not an object: it replaces the target.
		return patch, nil
	}
	var t map[string]json.RawMessage
	if len(target) == 0 || json.Unmarshal(target, &t) != nil || t == nil {
		t = map[string]json.RawMessage{}
	}
	for k, v := range p {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(t, k)
			continue
		}
		merged, err := MergePatch(t[k], v)
		if err != nil {
			return nil, err
		}
		t[k] = merged
	}
	return json.Marshal(t)
}

// CompleteOutput completes claim cl recording output (JSON) in its
// message's metadata, in one transaction (the batched acknowledgements
// are for messages without output); the count is 0 when the claim was
// not current or its message was asked to stop. Without a history
// (KeepCompleted false) the output is not kept: the claim is
// acknowledged.
func (e *Engine) CompleteOutput(ctx context.Context, cl driver.Claim, output []byte) (int, error) {
	if !e.cfg.KeepCompleted {
		return e.Complete(ctx, cl.SessionID, []driver.Claim{cl})
	}
	return txn.InTxV(ctx, e.drv, func(tx driver.Tx) (int, error) {
		ok, err := tx.MessageSetOutput(ctx, cl, string(output))
		if err != nil || !ok {
			return 0, err
		}
		return tx.MessageFinishMany(ctx, cl.SessionID, []driver.Claim{cl})
	})
}

// metaRW reads and writes a message's meta column (driver.QueueTx and
// CallerQueueTx have both).
type metaRW interface {
	MessageMeta(ctx context.Context, id int64) (meta string, finished, found bool, err error)
	MessageSetMeta(ctx context.Context, id int64, finished bool, meta string) (bool, error)
}

// UpdateMetadata merges patch (a JSON object, CheckMetadata) into the
// metadata of message id, waiting, running or finished (MergePatch).
func (e *Engine) UpdateMetadata(ctx context.Context, id int64, patch []byte) error {
	return txn.InTx(ctx, e.drv, func(tx driver.Tx) error { return updateMetadata(ctx, tx, id, patch) })
}

// UpdateMetadata is Engine.UpdateMetadata in the caller's transaction.
func (c Caller) UpdateMetadata(ctx context.Context, id int64, patch []byte) error {
	return updateMetadata(ctx, c.q, id, patch)
}

// updateMetadata reads the message's meta column (locking its row),
// merges patch into its metadata and writes it back, leaving the other
// keys as they are.
func updateMetadata(ctx context.Context, q metaRW, id int64, patch []byte) error {
	if len(patch) == 0 {
		return fmt.Errorf("%w: update message %d: no metadata given", errs.ErrInvalid, id)
	}
	if err := CheckMetadata(patch); err != nil {
		return err
	}
	meta, finished, found, err := q.MessageMeta(ctx, id)
	if err != nil {
		return fmt.Errorf("baton: update message %d: %w", id, err)
	}
	if !found {
		return fmt.Errorf("%w: message %d", errs.ErrNotFound, id)
	}
	var m map[string]json.RawMessage
	if meta == "" || json.Unmarshal([]byte(meta), &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	md, err := MergePatch(m["metadata"], patch)
	if err != nil {
		return fmt.Errorf("baton: update message %d: %w", id, err)
	}
	if len(md) > MaxMetadata {
		return fmt.Errorf("%w: message %d: the metadata would be %d bytes, more than %d", errs.ErrInvalid, id, len(md), MaxMetadata)
	}
	if string(md) == "{}" {
		delete(m, "metadata")
	} else {
		m["metadata"] = md
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := q.MessageSetMeta(ctx, id, finished, string(b)); err != nil {
		return fmt.Errorf("baton: update message %d: %w", id, err)
	}
	return nil
}

// outputTx records output on claim cl in the caller's transaction (before
// CompleteStatements complete it); ErrNotClaimed when the claim is not
// current.
func (e *Engine) outputTx(ctx context.Context, tx Execer, cl driver.Claim, queue string, output []byte) error {
	ct, err := InCallerTx(tx, "CompleteTx")
	if err != nil {
		return err
	}
	ok, err := e.queue.CallerQueueTx(ct).MessageSetOutput(ctx, cl, string(output))
	if err != nil {
		return fmt.Errorf("baton: complete: %w", err)
	}
	if !ok {
		return NotClaimed(cl.ID, queue)
	}
	return nil
}

// CheckDataFilter checks a listing's user-data filter: a tag ("" for
// any) and a metadata key ("" for any, like a tag) and value (only with a
// key).
func CheckDataFilter(tag, key, value string) error {
	if tag != "" {
		if err := ValidateName("tag", tag); err != nil {
			return err
		}
	}
	if key != "" {
		return ValidateName("metadata key", key)
	}
	if value != "" {
		return fmt.Errorf("%w: a metadata value to match needs its key", errs.ErrInvalid)
	}
	return nil
}
