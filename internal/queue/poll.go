package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/maintain"
)

// ConsumerPoll is how many poll intervals apart PollWaiting runs: a lost
// wake-up costs a consumer at most that many, as when each waiting Claim
// looked again on its own that often. Every interval cost an idle SQLite
// worker a fifth more CPU: a read after another connection's commit (the
// lease renewal's, every second) reads the pages it changed again.
const ConsumerPoll = 5

// PollWaiting (one goroutine: the consumer poll service) is the poll of this client's waiting consumers: one
// statement for all of their queues (QueuesReady), whatever the number of
// consumers, and a wake-up for the consumers of each queue that has a
// message due. A wake-up is a hint (DESIGN, Notifications): this is the
// path that covers a lost one.
func (e *Engine) PollWaiting(ctx context.Context) error {
	names := e.cfg.Waits.Names()
	if len(names) == 0 {
		return nil
	}
	e.polls.Add(1)
	ready, err := e.queue.QueuesReady(ctx, names)
	if err != nil {
		return fmt.Errorf("poll the queues of waiting consumers: %w", err)
	}
	for _, q := range e.poll.due(ready) {
		e.cfg.Waits.Wake(q)
	}
	return nil
}

// Polls is how many polls of its waiting consumers the engine has run.
func (e *Engine) Polls() int64 { return e.polls.Load() }

// PollService is the consumer poll as a service, every ConsumerPoll
// intervals while any consumer waits (resumed by a wait's start).
func (e *Engine) PollService(interval, timeout time.Duration, resume <-chan struct{}) maintain.Service {
	return maintain.Service{Name: "consumer poll", Interval: ConsumerPoll * interval, Timeout: timeout, Run: e.PollWaiting,
		Idle: func() bool { return !e.cfg.Waits.Waiting() }, Resume: resume}
}

// PrunerService is the history pruner as a service.
func (e *Engine) PrunerService(timeout time.Duration) maintain.Service {
	return maintain.Service{Name: "history pruner", Interval: time.Minute, Timeout: timeout, Run: e.PruneHistory}
}

// queuePoll is what PollWaiting remembers between its polls: for how many
// polls in a row each queue has had a message due while consumers waited
// on it. A queue that stays so is one whose due messages its consumers may
// not take yet (an ordered queue whose head runs, keys in flight, another
// kind): its consumers are woken on the first poll of such a run and then
// on every pollRetake-th, so that they claim again (in case the end of
// what held them back sent a wake-up that was lost) without claiming on
// every poll for nothing.
type queuePoll struct{ runs map[string]int }

// pollRetake is how many polls apart PollWaiting wakes the consumers of a
// queue that stays due while they wait.
const pollRetake = 2

// due takes the queues found due by a poll and returns those whose
// consumers to wake.
func (p *queuePoll) due(ready []string) []string {
	runs := make(map[string]int, len(ready))
	var wake []string
	for _, q := range ready {
		n := p.runs[q] + 1
		runs[q] = n
		if (n-1)%pollRetake == 0 {
			wake = append(wake, q)
		}
	}
	p.runs = runs
	return wake
}
