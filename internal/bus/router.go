package bus

import (
	"strings"
	"sync/atomic"

	"github.com/batonhq/baton/driver"
)

// Routes are the handlers of what the listener brings. None may block.
type Routes struct {
	// Locks are the client's waiting lock requests: a grant the backend
	// reports exactly is handed to its waiter at once.
	Locks *Locks
	// Look makes the lock service's wake loop read its waiters' statuses
	// (any other lock wake-up).
	Look func()
	// Queues are the consumers waiting for messages, woken by the
	// QueuePrefix channels.
	Queues *Queues
	// Cancel and Pause handle the payloads of the Cancel and Pause
	// channels.
	Cancel, Pause func(payload string)
	// Jobs and Subscribers handle the payloads of the JobEvents and
	// Subscribers channels.
	Jobs, Subscribers func(payload string)
	// Notify takes every notification of a user's channel.
	Notify func(channel, payload string)
}

// Router dispatches the listener's wake-ups and notifications to the
// Routes. Deaf (a test's lost wake-ups) drops every wake-up and internal
// notification, never a user's notification.
type Router struct {
	routes Routes
	deaf   atomic.Bool
}

// NewRouter makes a router to routes.
func NewRouter(routes Routes) *Router { return &Router{routes: routes} }

// SetDeaf makes the router drop (on) or take again every wake-up: lock
// grants and looks, queue wake-ups, cancellations and pauses.
func (r *Router) SetDeaf(on bool) { r.deaf.Store(on) }

// Wake takes a lock wake-up (driver.ListenParams.Wake): grants the
// backend reported exactly go to their waiters at once; anything else
// makes the wake loop look.
func (r *Router) Wake(granted []driver.Request) {
	if r.deaf.Load() {
		return
	}
	if len(granted) > 0 && !r.routes.Locks.Grant(granted) {
		return
	}
	r.routes.Look()
}

// Deliver takes a notification (driver.ListenParams.Notify) and hands it
// to the handler of its channel.
func (r *Router) Deliver(channel, payload string) {
	if channel == Cancel {
		if !r.deaf.Load() {
			r.routes.Cancel(payload)
		}
		return
	}
	if channel == Pause {
		if !r.deaf.Load() {
			r.routes.Pause(payload)
		}
		return
	}
	if channel == JobEvents {
		r.routes.Jobs(payload) // events, not wake-ups: never deaf
		return
	}
	if channel == Subscribers {
		if !r.deaf.Load() {
			r.routes.Subscribers(payload)
		}
		return
	}
	if q, ok := strings.CutPrefix(channel, QueuePrefix); ok {
		switch {
		case r.deaf.Load():
		case channel == AllQueues:
			r.routes.Queues.WakeAll()
		default:
			r.routes.Queues.Wake(q)
		}
		return
	}
	r.routes.Notify(channel, payload)
}
