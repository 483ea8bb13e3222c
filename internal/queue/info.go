package queue

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/events"
)

// Info is one message as monitoring shows it: baton.MessageInfo, whose
// state is of type S and attempt records of type E (the root converts).
// Its JSON is the same on every backend, the payload as text when it is
// UTF-8, otherwise in base64 (payload_base64).
type Info[S ~string, E any] struct {
	ID              int64     `json:"id"`
	Queue           string    `json:"queue"`
	Kind            string    `json:"kind,omitempty"`
	State           S         `json:"state"`
	Payload         []byte    `json:"-"`
	Priority        int       `json:"priority"`
	Key             string    `json:"key,omitempty"`
	Attempt         int       `json:"attempt"`
	MaxAttempts     int       `json:"max_attempts"`
	LastError       string    `json:"last_error,omitempty"`
	Errors          []E       `json:"errors,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	RunAt           time.Time `json:"run_at,omitzero"`
	ClaimedBy       string    `json:"claimed_by,omitempty"`
	ClaimedUntil    time.Time `json:"claimed_until,omitzero"`
	CancelRequested bool      `json:"cancel_requested,omitempty"`
	FinishedAt      time.Time `json:"finished_at,omitzero"`
	// Metadata, Tags and Output are the message's user data (data.go).
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Tags     []string        `json:"tags,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
}

// InfoOf converts a stored message to what monitoring shows; a record of
// attempts that does not decode is shown as one record saying so (made
// by unreadable).
func InfoOf[S ~string, E any](m driver.Message, now time.Time, unreadable func(error) E) Info[S, E] {
	payload, key, _ := events.Canonical(m.Queue, m.Payload, m.Key)
	info := Info[S, E]{ID: m.ID, Queue: m.Queue, Kind: m.Kind, State: S(StateName(m, now)), Payload: payload, Priority: m.Priority,
		Key: key, Attempt: m.Attempt, MaxAttempts: m.MaxAttempts, LastError: m.LastError, CreatedAt: m.CreatedAt,
		RunAt: m.RunAt, FinishedAt: m.FinishedAt, CancelRequested: m.CancelRequested}
	if m.Meta != "" {
		meta := DecodeMeta(m.Meta)
		// Canonical: the same JSON on every backend (PostgreSQL's jsonb
		// reorders keys and MySQL's JSON functions space what they write).
		info.Metadata, info.Tags, info.Output = canonical(meta.Metadata), meta.Tags, canonical(meta.Output)
	}
	if m.State == driver.MessageClaimed {
		info.ClaimedBy, info.ClaimedUntil = m.ClaimedBy, m.ClaimUntil
	}
	if m.Errors != "" {
		if err := json.Unmarshal([]byte(m.Errors), &info.Errors); err != nil {
			info.Errors = []E{unreadable(err)}
		}
	}
	return info
}

// infoJSON is Info's JSON form: the payload as text when it is UTF-8,
// otherwise in base64 under payload_base64.
type infoJSON[S ~string, E any] struct {
	infoFields[S, E]
	Payload   *string `json:"payload,omitempty"`
	Payload64 string  `json:"payload_base64,omitempty"`
}

type infoFields[S ~string, E any] Info[S, E]

// MarshalJSON implements json.Marshaler.
func (m Info[S, E]) MarshalJSON() ([]byte, error) {
	j := infoJSON[S, E]{infoFields: infoFields[S, E](m)}
	j.infoFields.Payload = nil
	if utf8.Valid(m.Payload) {
		s := string(m.Payload)
		j.Payload = &s
	} else {
		j.Payload64 = base64.StdEncoding.EncodeToString(m.Payload)
	}
	return json.Marshal(j)
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *Info[S, E]) UnmarshalJSON(b []byte) error {
	var j infoJSON[S, E]
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Info[S, E](j.infoFields)
	switch {
	case j.Payload != nil:
		m.Payload = []byte(*j.Payload)
	case j.Payload64 != "":
		p, err := base64.StdEncoding.DecodeString(j.Payload64)
		if err != nil {
			return fmt.Errorf("payload_base64: %w", err)
		}
		m.Payload = p
	}
	return nil
}

// canonical is JSON b in canonical form (Canonical), nil for none.
func canonical(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return Canonical(b)
}
