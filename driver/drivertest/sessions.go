package drivertest

import (
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

func newSession(t *testing.T, d driver.Driver, id, client string, lease time.Duration) driver.Session {
	t.Helper()
	s := driver.Session{ID: id, ClientID: client, Host: "host-" + client, PID: 4242, Name: "owner " + id}
	must(t, d.NoTx().SessionInsert(testCtx(t), s, lease))
	return s
}

func testSessions(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	a1 := newSession(t, d, "a1", "A", hour)
	newSession(t, d, "a2", "A", hour)
	newSession(t, d, "b1", "B", -time.Second) // its lease already ran out
	c1 := driver.Session{ID: "c1", ClientID: "C", Host: "h", PID: 7, Name: "c", HostID: "boot-1"}
	must(t, d.NoTx().SessionInsert(ctx, c1, hour))
	checkSessionList(t, d, a1)
	checkSessionsByClient(t, d)
	checkReapable(t, d)
	checkNamedLive(t, d)
	must(t, d.NoTx().SessionDelete(ctx, "b1"))
	_, found := findSession(listSessions(t, d), "b1")
	failIf(t, found, "SessionDelete left the row")
}

func listSessions(t *testing.T, d driver.Driver) []driver.Session {
	t.Helper()
	all, err := d.NoTx().SessionList(testCtx(t))
	must(t, err)
	return all
}

func findSession(all []driver.Session, id string) (driver.Session, bool) {
	i := slices.IndexFunc(all, func(s driver.Session) bool { return s.ID == id })
	if i < 0 {
		return driver.Session{}, false
	}
	return all[i], true
}

// checkSessionList: the four sessions listed as stored, with their leases
// and host ids.
func checkSessionList(t *testing.T, d driver.Driver, a1 driver.Session) {
	all := listSessions(t, d)
	failIf(t, len(all) != 4, "SessionList: %d sessions, want 4", len(all))
	got, _ := findSession(all, "a1")
	want := a1
	want.CreatedAt, want.ExpiresAt = got.CreatedAt, got.ExpiresAt
	failIf(t, got != want, "SessionList: %+v, stored %+v", got, a1)
	failIf(t, !got.ExpiresAt.After(got.CreatedAt), "a session with a lease of an hour expires at %v, created at %v", got.ExpiresAt, got.CreatedAt)
	c1, _ := findSession(all, "c1")
	failIf(t, c1.HostID != "boot-1", "HostID not kept: %+v", c1)
}

// checkSessionsByClient: a client's live sessions, and a renewal that
// never revives an expired one.
func checkSessionsByClient(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	ids, err := d.NoTx().SessionListByClient(ctx, "A")
	must(t, err)
	sort.Strings(ids)
	failIf(t, !slices.Equal(ids, []string{"a1", "a2"}), "SessionListByClient(A) = %v", ids)
	ids, err = d.NoTx().SessionListByClient(ctx, "B")
	failIf(t, err != nil || len(ids) != 0, "SessionListByClient lists an expired session: %v %v", ids, err)
	n, err := d.NoTx().SessionRenew(ctx, []string{"a1", "b1", "nobody"}, hour)
	wantCount(t, "SessionRenew (an expired session is never revived)", n, err, 1)
}

// checkReapable: other clients' sessions that expired or run on the
// caller's host.
func checkReapable(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	reap, err := d.NoTx().SessionListReapable(ctx, "A", "boot-1", 10)
	must(t, err)
	wantReapable(t, "SessionListReapable(A, boot-1): b1 (expired) and c1 (same host)", reap, map[string]bool{"b1": true, "c1": false})
	i := slices.IndexFunc(reap, func(r driver.SessionRef) bool { return r.ID == "c1" })
	failIf(t, reap[i].PID != 7, "reapable c1 has PID %d, want 7", reap[i].PID)
	reap, _ = d.NoTx().SessionListReapable(ctx, "B", "other-boot", 10)
	wantReapable(t, "a client is offered its own or live sessions", reap, map[string]bool{})
	reap, _ = d.NoTx().SessionListReapable(ctx, "A", "", 10)
	wantReapable(t, "an empty host id matched sessions by host", reap, map[string]bool{"b1": true})
}

func testHeartbeat(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "a1", "A", hour)
	newSession(t, d, "a2", "A", hour)
	newSession(t, d, "b1", "B", -time.Second)
	renewed, reap, err := d.Sessions().SessionHeartbeat(ctx, driver.HeartbeatParams{
		ClientID: "A", HostID: "", SessionIDs: []string{"a1", "a2", "b1"}, Lease: hour, Limit: 10,
	})
	must(t, err)
	failIf(t, renewed != 2, "heartbeat renewed %d, want 2 (b1 is expired and another client's)", renewed)
	wantReapable(t, "heartbeat reapable", reap, map[string]bool{"b1": true})
	// No sessions to renew: still lists what may be reaped.
	renewed, reap, err = d.Sessions().SessionHeartbeat(ctx, driver.HeartbeatParams{ClientID: "A", Lease: hour, Limit: 10})
	must(t, err)
	failIf(t, renewed != 0 || len(reap) != 1, "heartbeat without sessions: renewed %d, reapable %+v", renewed, reap)
}

// sessionRefs maps the sessions offered for reaping to whether their lease
// ran out.
func sessionRefs(refs []driver.SessionRef) map[string]bool {
	out := map[string]bool{}
	for _, r := range refs {
		out[r.ID] = r.Expired
	}
	return out
}

// wantReapable fails unless refs are the sessions of want (id: expired),
// each once.
func wantReapable(t *testing.T, what string, refs []driver.SessionRef, want map[string]bool) {
	t.Helper()
	failIf(t, len(refs) != len(want) || !maps.Equal(sessionRefs(refs), want), "%s = %+v, want %v (id: expired)", what, refs, want)
}

// checkNamedLive: SessionNamedLive sees a live session by its name, not
// one whose lease ran out, nor a name nobody has.
func checkNamedLive(t *testing.T, d driver.Driver) {
	for name, want := range map[string]bool{"owner a1": true, "owner b1": false, "nobody": false} {
		got, err := d.Sessions().SessionNamedLive(testCtx(t), name)
		must(t, err)
		failIf(t, got != want, "SessionNamedLive(%q) = %v, want %v", name, got, want)
	}
}
