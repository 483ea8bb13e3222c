//go:build !linux

package bench

import "time"

// preciseSleeper is time.Sleep where no high-resolution sleep is wired
// up (sleep_linux.go): added round trips come out longer than asked.
func preciseSleeper() (sleep func(time.Duration), done func()) {
	return time.Sleep, func() {}
}
