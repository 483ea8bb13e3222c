package postgres

import (
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/driver"
)

// A wake-up payload written by wakePayloads reads back the same: grants
// with id, token, session and call; one look per client; chunks under the
// size asked for; and a client with any look gets no grants.
func TestWakePayloadRoundTrip(t *testing.T) {
	g := func(client string, id int64) driver.Request {
		return driver.Request{ClientID: client, ID: id, SessionID: "s" + client, CallID: id * 10, Status: driver.StatusGranted, Token: id + 100}
	}
	wake := []driver.Request{g("a", 1), {ClientID: "b"}, g("a", 2), {ClientID: "b"}, g("b", 3)}
	ps := wakePayloads(wake, 7000)
	if len(ps) != 1 || strings.Count(ps[0], ",") != 3 {
		t.Fatalf("payloads %q: want one, with a's two grants, b's look once and b's grant", ps)
	}
	mine, granted := parsePayload(ps[0], "a")
	if !mine || !reflect.DeepEqual(granted, []driver.Request{g("a", 1), g("a", 2)}) {
		t.Fatalf("a: %v %+v", mine, granted)
	}
	if mine, granted := parsePayload(ps[0], "b"); !mine || granted != nil {
		t.Fatalf("b (a look and a grant): %v %+v, want a look", mine, granted)
	}
	if mine, _ := parsePayload(ps[0], "c"); mine {
		t.Fatal("c is not in the payload")
	}
	// An entry of a release from an earlier version (no session, call).
	if _, granted := parsePayload("a:5:6", "a"); len(granted) != 1 || granted[0].ID != 5 || granted[0].Token != 6 || granted[0].SessionID != "" {
		t.Fatalf("old entry read as %+v", granted)
	}
	var many []driver.Request
	for i := int64(1); i <= 300; i++ {
		many = append(many, g("client-with-a-long-id", i))
	}
	ps = wakePayloads(many, 7000)
	n := 0
	for _, p := range ps {
		if len(p) > 7000 {
			t.Fatalf("a payload of %d bytes", len(p))
		}
		_, gs := parsePayload(p, "client-with-a-long-id")
		n += len(gs)
	}
	if len(ps) < 2 || n != 300 {
		t.Fatalf("%d payloads carrying %d grants, want several carrying 300", len(ps), n)
	}
}
