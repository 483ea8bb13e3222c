package baton

import (
	"encoding/json"

	"github.com/batonhq/baton/internal/tracing"
)

// messageMeta is what a message carries in its meta column (JSON): the
// enqueuer's trace context (internal/tracing) and the message's handler
// timeout.
type messageMeta struct {
	tracing.Context
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// encodeMeta writes a message's metadata ("" when there is none).
func encodeMeta(m messageMeta) string {
	if m == (messageMeta{}) {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}

// decodeMeta reads a message's metadata; what cannot be read is ignored.
func decodeMeta(s string) messageMeta {
	var m messageMeta
	if s != "" {
		_ = json.Unmarshal([]byte(s), &m)
	}
	return m
}

// withTrace adds the trace context to a message's metadata.
func withTrace(meta string, tc tracing.Context) string {
	m := decodeMeta(meta)
	m.Context = tc
	return encodeMeta(m)
}
