// Package bus is a client's listener and what it carries: the connection
// that brings lock grants, queue wake-ups, cancellations, pauses and the
// users' notifications (started by the first waiter), the names of
// baton's internal channels, and the Router that hands each wake-up and
// notification to its handler.
package bus

// The internal channels: notifications baton sends itself, on names a
// user's channel cannot have (a user's channel has no '#').
const (
	// Cancel carries the id of a running message whose cancellation was
	// requested: the process running it stops its handler.
	Cancel = "#x#"
	// Pause carries the name of a queue paused or resumed: workers stop
	// starting the messages they claimed ahead of a pause.
	Pause = "#p#"
	// QueuePrefix, followed by a queue's name, wakes that queue's
	// consumers (the payload is empty).
	QueuePrefix = "#q#"
	// JobEvents carries job state changes (internal/jobevents), for the
	// subscribers of any process.
	JobEvents = "#j#"
	// Subscribers says that a job-event subscriber came ("1") or left
	// ("0"): processes then send job events, or check whether to.
	Subscribers = "#s#"
	// AllQueues wakes every consumer: some queue may have work, which one
	// is not known.
	AllQueues = QueuePrefix + "*"
)

// QueueChannel is the channel that wakes the consumers of queue.
func QueueChannel(queue string) string { return QueuePrefix + queue }
