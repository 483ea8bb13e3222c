package bus

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/batontest"
	"github.com/batonhq/baton/internal/errs"
)

// fakeDriver counts the listeners it starts and stops; fail makes the
// next starts fail.
type fakeDriver struct {
	driver.Notifier
	mu            sync.Mutex
	started, live int
	fail          int
	params        driver.ListenParams
}

func (d *fakeDriver) Listen(ctx context.Context, p driver.ListenParams) (func(), error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail > 0 {
		d.fail--
		return nil, errors.New("no server")
	}
	d.started++
	d.live++
	d.params = p
	return func() {
		d.mu.Lock()
		d.live--
		d.mu.Unlock()
	}, nil
}

func (d *fakeDriver) counts() (started, live int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.started, d.live
}

func newListener(t *testing.T, d *fakeDriver, closeIdle bool) (*Listener, *Locks, *batontest.Steps, chan struct{}) {
	t.Helper()
	var rec batontest.Steps
	locks := NewLocks(func(bool) {})
	quit := make(chan struct{})
	l := New(Config{Notifier: d, ClientID: "c", Lease: time.Second, PollInterval: time.Millisecond, Quit: quit,
		CloseIdle: closeIdle, Kicked: func() {}, Logf: func(string, ...any) {},
		Routes: Routes{Locks: locks, Look: func() { rec.Add("look") }, Queues: NewQueues(nil),
			Cancel: func(p string) { rec.Add("cancel " + p) },
			Pause:  func(p string) { rec.Add("pause " + p) },
			Notify: func(ch, p string) { rec.Add("notify " + ch + " " + p) }}})
	t.Cleanup(func() {
		if !closedChan(quit) {
			close(quit)
			l.Close()
		}
	})
	return l, locks, &rec, quit
}

func closedChan(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestRouterDispatch: each internal channel reaches its handler, any
// other channel the users' notifications; deaf drops the internal ones
// and the lock wake-ups only.
func TestRouterDispatch(t *testing.T) {
	var rec batontest.Steps
	queues := NewQueues(nil)
	woken := queues.Add("jobs")
	r := NewRouter(Routes{Locks: NewLocks(func(bool) {}), Look: func() { rec.Add("look") }, Queues: queues,
		Cancel: func(p string) { rec.Add("cancel " + p) }, Pause: func(p string) { rec.Add("pause " + p) },
		Notify: func(ch, p string) { rec.Add("notify " + ch + " " + p) }})
	for _, deaf := range []bool{false, true} {
		r.SetDeaf(deaf)
		r.Deliver(Cancel, "7")
		r.Deliver(Pause, "jobs")
		r.Deliver("news", "hi")
		r.Deliver(QueueChannel("jobs"), "")
		r.Wake(nil)
		want := []string{"cancel 7", "pause jobs", "notify news hi", "look"}
		if deaf {
			want = []string{"notify news hi"}
		}
		if got := rec.Take(); !equal(got, want) {
			t.Errorf("deaf %v: handled %q, want %q", deaf, got, want)
		}
		select {
		case <-woken:
			if deaf {
				t.Errorf("a deaf router woke a consumer")
			}
		default:
			if !deaf {
				t.Errorf("the queue's channel woke no consumer")
			}
		}
	}
	r.SetDeaf(false)
	r.Deliver(AllQueues, "")
	select {
	case <-woken:
	default:
		t.Errorf("AllQueues woke no consumer")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestListenerStartsOnce: many waiters start one listener, which wakes
// the waiters once it runs and routes what the driver brings.
func TestListenerStartsOnce(t *testing.T) {
	d := &fakeDriver{}
	l, _, rec, _ := newListener(t, d, false)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Listening(context.Background()); err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if started, live := d.counts(); started != 1 || live != 1 || failed.Load() != 0 {
		t.Fatalf("started %d, live %d, failed %d; want 1, 1, 0", started, live, failed.Load())
	}
	if got := rec.Take(); !equal(got, []string{"look"}) {
		t.Errorf("the start handled %q, want a look", got)
	}
	d.params.Notify(Cancel, "3")
	if got := rec.Take(); !equal(got, []string{"cancel 3"}) {
		t.Errorf("the driver's notification handled %q", got)
	}
}

// TestListenerIdle: with CloseIdle, a lock waiter's listener closes once
// no lock waits, and the next waiter starts it again; one that a consumer
// used stays.
func TestListenerIdle(t *testing.T) {
	d := &fakeDriver{}
	l, locks, _, _ := newListener(t, d, true)
	ctx := context.Background()
	if err := l.LockListening(ctx); err != nil {
		t.Fatal(err)
	}
	locks.Add(1, "s", 1)
	locks.Remove(1)
	l.LocksIdle()
	waitFor(t, func() bool { _, live := d.counts(); return live == 0 })
	if err := l.Listening(ctx); err != nil {
		t.Fatal(err)
	}
	l.LocksIdle()
	time.Sleep(20 * time.Millisecond)
	if started, live := d.counts(); started != 2 || live != 1 {
		t.Errorf("started %d, live %d; want 2, 1 (kept)", started, live)
	}
}

// TestListenerFailsThenCloses: a start that fails three times reports
// its error and is tried again by the next waiter; Close stops the
// listener for good, and one that never ran never starts.
func TestListenerFailsThenCloses(t *testing.T) {
	d := &fakeDriver{fail: 3}
	l, _, _, quit := newListener(t, d, false)
	ctx := context.Background()
	if err := l.LockListening(ctx); err == nil {
		t.Fatal("a start that failed three times reported no error")
	}
	if err := l.LockListening(ctx); err != nil {
		t.Fatalf("the next waiter's start: %v", err)
	}
	close(quit)
	l.Close()
	if _, live := d.counts(); live != 0 {
		t.Errorf("Close left the listener running")
	}
	never, _, _, quit2 := newListener(t, &fakeDriver{}, false)
	close(quit2)
	never.Close()
	if err := never.Listening(ctx); !errors.Is(err, errs.ErrClosed) {
		t.Errorf("Listening after Close: %v, want ErrClosed", err)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
