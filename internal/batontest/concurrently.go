package batontest

import (
	"sync"
	"testing"
)

// Concurrently calls f(0) … f(n-1), each in a goroutine of its own, and
// once all have returned fails the test with the errors they returned.
func Concurrently(t testing.TB, n int, f func(i int) error) {
	t.Helper()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- f(i)
		}()
	}
	wg.Wait()
	close(errs)
	failed := false
	for err := range errs {
		if err != nil {
			t.Error(err)
			failed = true
		}
	}
	if failed {
		t.FailNow()
	}
}
