package drivertest

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

// The suite's small checks and the reads they rest on. Each fails the test
// with what it was checking; none retries or waits.

// wantDone fails unless a call that reports whether it acted reported
// want, without an error.
func wantDone(t *testing.T, what string, ok bool, err error, want bool) {
	t.Helper()
	failIf(t, ok != want || err != nil, "%s: %v %v, want %v", what, ok, err, want)
}

// wantCount fails unless a call that counts what it did counted want,
// without an error.
func wantCount[N ~int | ~int64](t *testing.T, what string, n N, err error, want N) {
	t.Helper()
	failIf(t, n != want || err != nil, "%s: %d %v, want %d", what, n, err, want)
}

// wantIDs fails unless got holds exactly the ids, in their order.
func wantIDs(t *testing.T, what string, got []int64, want ...int64) {
	t.Helper()
	failIf(t, !slices.Equal(got, want), "%s = %v, want %v", what, got, want)
}

// step is a call that reports whether it acted, and what it must report.
type step struct {
	what string
	do   func() (bool, error)
	want bool
}

// wantSteps runs the steps in order; each must report its want without an
// error.
func wantSteps(t *testing.T, steps ...step) {
	t.Helper()
	for _, s := range steps {
		ok, err := s.do()
		wantDone(t, s.what, ok, err, s.want)
	}
}

// acted drops the state that MessageRetryNow, MessageDeleteWaiting and
// MessageCancel-like calls report beside whether they acted.
func acted(done bool, _ driver.MessageState, err error) (bool, error) { return done, err }

// rising reports whether the ids strictly increase.
func rising(ids ...int64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return false
		}
	}
	return true
}

func ids(ms []driver.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func reqIDs(rs []driver.Request) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// stored is the part of a request a backend keeps as it was given: all but
// its id, its times and where it lives.
func stored(r driver.Request) driver.Request {
	return driver.Request{SessionID: r.SessionID, ClientID: r.ClientID, Ident: r.Ident, Mode: r.Mode, Status: r.Status, CallID: r.CallID, Token: r.Token}
}

// counts are a lock row's counters: granted readers, granted writers,
// waiting requests.
func counts(s driver.IdentState) [3]int64 { return [3]int64{s.Readers, s.Writers, s.Waiting} }

// lockRow locks and reads the lock row of id in tx.
func lockRow(t *testing.T, tx driver.Tx, id driver.Ident) driver.IdentState {
	t.Helper()
	st, err := tx.LockIdentLock(testCtx(t), []driver.Ident{id})
	must(t, err)
	failIf(t, len(st) != 1, "LockIdentLock(%v) = %+v, want its one row", id, st)
	return st[0]
}

// requestStatus reads request id outside a transaction, as
// LockRequestStatuses does (the zero request when it is gone).
func requestStatus(t *testing.T, d driver.Driver, id int64) driver.Request {
	t.Helper()
	st, err := d.Locks().LockRequestStatuses(testCtx(t), []int64{id})
	must(t, err)
	return st[id]
}

// grant is a request's status and fencing token.
type grant struct {
	status driver.RequestStatus
	token  int64
}

func grantOf(r driver.Request) grant { return grant{r.Status, r.Token} }

// wantHolder fails unless LockUserHolder finds the user lock held by the
// session (want "": by nobody).
func wantHolder(t *testing.T, tx driver.Tx, name, want string) {
	t.Helper()
	holder, ok, err := tx.LockUserHolder(testCtx(t), name)
	must(t, err)
	failIf(t, ok != (want != "") || holder != want, "LockUserHolder(%s) = %q %v, want %q", name, holder, ok, want)
}

// lockInfo fails unless LockInfoList lists n requests, id among them, and
// returns id's row.
func lockInfo(t *testing.T, tx driver.Tx, n int, id int64) driver.LockInfo {
	t.Helper()
	info, err := tx.LockInfoList(testCtx(t))
	must(t, err)
	i := slices.IndexFunc(info, func(l driver.LockInfo) bool { return l.ID == id })
	failIf(t, len(info) != n || i < 0, "LockInfoList = %+v, want %d requests, %d among them", info, n, id)
	return info[i]
}

// wantOrphans fails unless LockRequestListOrphans lists exactly the
// requests.
func wantOrphans(t *testing.T, tx driver.Tx, want ...int64) {
	t.Helper()
	o, err := tx.LockRequestListOrphans(testCtx(t), 10)
	must(t, err)
	wantIDs(t, "LockRequestListOrphans", reqIDs(o), want...)
}

// sessionRequests lists the session's requests of every kind.
func sessionRequests(t *testing.T, d driver.Driver, session string) []driver.Request {
	t.Helper()
	rs, err := d.NoTx().LockRequestListBySession(testCtx(t), session, -1, "")
	must(t, err)
	return rs
}

// wantFastAcquire fails unless the fast path grants (want) or refuses the
// lock, without an error.
func wantFastAcquire(t *testing.T, d driver.Driver, p driver.FastAcquireParams, want bool, what string) {
	t.Helper()
	_, ok, err := d.Locks().LockFastAcquire(testCtx(t), p)
	wantDone(t, what, ok, err, want)
}

// fastRelease releases the session's instances of name in namespace ns
// ("": every name) by the fast path.
func fastRelease(t *testing.T, d driver.Driver, session, name string) (n int, waiting []driver.Ident) {
	t.Helper()
	n, waiting, err := d.Locks().LockFastRelease(testCtx(t), driver.FastReleaseParams{SessionID: session, Kind: driver.KindService, NS: "ns", Name: name})
	must(t, err)
	return n, waiting
}

// queueWaiter stores the pending request r behind the holders of its
// identifier, as the slow path leaves it, once the lock row shows the
// holders' readers and writers.
func queueWaiter(t *testing.T, d driver.Driver, r driver.Request, readers, writers int64) driver.Request {
	t.Helper()
	inTx(t, d, func(tx driver.Tx) {
		st := lockRow(t, tx, r.Ident)
		failIf(t, st.Readers != readers || st.Writers != writers, "the lock row counts %d readers and %d writers, want %d and %d (the grants so far)", st.Readers, st.Writers, readers, writers)
		r = insertRequest(t, tx, r)
		st.Waiting++
		must(t, tx.LockIdentUpdate(testCtx(t), st))
	})
	return r
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

// workQueue registers queue q and starts session w of client A to work
// it; it returns the driver's statements outside a transaction.
func workQueue(t *testing.T, d driver.Driver) driver.Tx {
	t.Helper()
	newSession(t, d, "w", "A", hour)
	tx := d.NoTx()
	must(t, tx.QueueRegister(testCtx(t), "q"))
	return tx
}

// insertMessage enqueues m.
func insertMessage(t *testing.T, tx driver.Tx, m driver.NewMessage) int64 {
	t.Helper()
	id, err := tx.MessageInsert(testCtx(t), m)
	must(t, err)
	return id
}

// message reads the one message id.
func message(t *testing.T, tx driver.Tx, id int64) driver.Message {
	t.Helper()
	ms, err := tx.MessageByIDs(testCtx(t), []int64{id})
	must(t, err)
	failIf(t, len(ms) != 1, "MessageByIDs(%d) = %+v", id, ms)
	return ms[0]
}

// ready lists queue's ready messages through the filter (at most 10 when
// it sets no limit).
func ready(t *testing.T, tx driver.Tx, queue string, f driver.ListFilter) []driver.Message {
	t.Helper()
	f.Queue, f.State = queue, driver.MessageReady
	if f.Limit == 0 {
		f.Limit = 10
	}
	l, err := tx.MessageList(testCtx(t), f)
	must(t, err)
	return l
}

// content is what a message is enqueued with and keeps.
type content struct {
	Payload, Key, Meta    string
	HasKey                bool
	Priority, MaxAttempts int
}

func contentOf(m driver.Message) content {
	return content{string(m.Payload), m.Key, m.Meta, m.HasKey, m.Priority, m.MaxAttempts}
}

func sent(m driver.NewMessage) content {
	return content{string(m.Payload), m.Key, m.Meta, m.HasKey, m.Priority, m.MaxAttempts}
}

// claimsOf are the session's claims of the messages' current attempts.
func claimsOf(ms []driver.Message, session string) []driver.Claim {
	out := make([]driver.Claim, len(ms))
	for i, m := range ms {
		out[i] = driver.Claim{ID: m.ID, SessionID: session, Attempt: m.Attempt}
	}
	return out
}

// wantClaimIDs fails unless ClaimIDs of the ids for session w, in the mode
// and with the lease, claims want of them.
func wantClaimIDs(t *testing.T, tx driver.Tx, mode int, lease time.Duration, want int, ids ...int64) {
	t.Helper()
	n, err := tx.ClaimIDs(testCtx(t), "w", mode, lease, ids)
	wantCount(t, "ClaimIDs", n, err, want)
}

// backlog are a queue's message counts: ready, scheduled, claimed, dead.
func backlog(st driver.QueueStats) [4]int64 {
	return [4]int64{st.Ready, st.Scheduled, st.Claimed, st.Dead}
}

// queueStats reads the statistics of queue q.
func queueStats(t *testing.T, tx driver.Tx) driver.QueueStats {
	t.Helper()
	st, err := tx.QueueStats(testCtx(t), "q")
	must(t, err)
	return st
}

// wantNoRequests fails unless the session has no request left.
func wantNoRequests(t *testing.T, d driver.Driver, session, what string) {
	t.Helper()
	rs := sessionRequests(t, d, session)
	failIf(t, len(rs) != 0, "%s: %+v", what, rs)
}
