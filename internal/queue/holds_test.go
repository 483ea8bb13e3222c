package queue

import (
	"errors"
	"slices"
	"testing"

	"github.com/batonhq/baton/driver"
)

// TestHoldsUnknown: of a session's claims, those its calls of Claim did not
// deliver (or delivered at another attempt) are unknown, and given back as
// claims that never started; what it records and the database no longer
// has is forgotten. While a call of Claim is in flight, or once one began
// after the settle looked, nothing is unknown: the claims may be its.
func TestHoldsUnknown(t *testing.T) {
	var h Holds
	h.begin()
	h.end([]*driver.Message{{ID: 1, Attempt: 1}, {ID: 2, Attempt: 3}, {ID: 3, Attempt: 1}}, false)
	h.begin()
	h.end(nil, true)
	if !h.due() {
		t.Fatal("a failed claim leaves nothing to settle")
	}
	refs := []driver.ClaimRef{
		{ID: 1, Attempt: 1, Mode: 0},
		{ID: 2, Attempt: 4, Mode: 0}, // claimed again: not the claim delivered
		{ID: 4, Attempt: 1, Mode: 0}, // never delivered
	}
	unknown, err := h.unknown(refs, h.claims)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range unknown {
		ids = append(ids, r.ID)
		if r.Mode != driver.ClaimHeld {
			t.Fatalf("claim %d given back in mode %d, not as a claim that never started", r.ID, r.Mode)
		}
	}
	if !slices.Equal(ids, []int64{2, 4}) {
		t.Fatalf("unknown claims %v, want [2 4]", ids)
	}
	if _, ok := h.held[3]; ok {
		t.Fatal("a claim the database no longer has is still recorded")
	}
	h.Settled(driver.Claim{ID: 1, Attempt: 1})
	if len(h.held) != 1 { // 2, at attempt 3
		t.Fatalf("held %v after settling 1", h.held)
	}

	began := h.claims
	h.begin()
	if _, err := h.unknown(refs, began); !errors.Is(err, errClaimsMoved) {
		t.Fatalf("with a claim in flight: %v", err)
	}
	h.end(nil, false)
	if _, err := h.unknown(refs, began); !errors.Is(err, errClaimsMoved) {
		t.Fatalf("with a claim begun since: %v", err)
	}
}
