package bench

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleeper makes the calling goroutine's sleeps precise to tens of
// µs: Go's timers wake an idle process on a millisecond's tick, which
// would make a half round trip of 250 µs last more than 1 ms. The
// goroutine keeps its thread (the caller ends it with the goroutine) and
// sleeps in the kernel's high-resolution nanosleep.
func preciseSleeper() (sleep func(time.Duration), done func()) {
	runtime.LockOSThread()
	return func(d time.Duration) {
		due := time.Now().Add(d)
		for d > 0 {
			ts := unix.NsecToTimespec(int64(d))
			_ = unix.Nanosleep(&ts, nil)
			d = time.Until(due)
		}
	}, runtime.UnlockOSThread
}
