package baton_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestSeed002Mailer is seed 002: a mail queue of 20 messages, fetched 10 at
// a time again and again; a failed message goes to the back of the queue
// until its limit of 3 attempts; messages 5, 10 and 15 never succeed and
// end as dead letters while the rest flow.
func TestSeed002Mailer(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		enqueueMany(t, c, "t_queue", 20, func(i int) baton.NewMessage {
			return baton.NewMessage{Payload: []byte(fmt.Sprintf("Message %d", i+1)), EnqueueOptions: baton.EnqueueOptions{MaxAttempts: 3}}
		})
		s := session(t, c)
		sent := map[string]int{}
		var batches []string
		for round := 0; round < 10; round++ {
			ms := claim(t, s, "t_queue", baton.ClaimOptions{Max: 10})
			if len(ms) == 0 {
				break
			}
			var nums []string
			for _, m := range ms {
				n := strings.TrimPrefix(string(m.Payload), "Message ")
				nums = append(nums, n)
				if n == "5" || n == "10" || n == "15" {
					if err := s.RetryAfter(ctx, m, 0, errors.New("mailbox unavailable")); err != nil {
						t.Fatal(err)
					}
					continue
				}
				sent[n]++
				ack(t, s, m)
			}
			batches = append(batches, strings.Join(nums, " "))
		}
		want := []string{"1 2 3 4 5 6 7 8 9 10", "11 12 13 14 15 16 17 18 19 20", "5 10 15", "5 10 15"}
		if strings.Join(batches, " | ") != strings.Join(want, " | ") {
			t.Fatalf("batches\n%s\nwant\n%s", strings.Join(batches, "\n"), strings.Join(want, "\n"))
		}
		if len(sent) != 17 {
			t.Fatalf("%d messages sent, want 17", len(sent))
		}
		dead, err := c.DeadLetters(ctx, "t_queue", 10)
		if err != nil || len(dead) != 3 {
			t.Fatalf("dead letters %+v %v", dead, err)
		}
		for _, d := range dead {
			if d.Attempts != 3 {
				t.Fatalf("dead letter %s after %d attempts", d.Payload, d.Attempts)
			}
		}
	})
}

// TestSeed000WakeOnCommit is seed 000: a consumer blocked on an empty queue
// wakes when a producer commits, not before; a row committed while the
// consumer was busy is not missed; a consumer started first never blocks
// the producer; neither side dying hangs the other.
func TestSeed000WakeOnCommit(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		consumerC, dsn := openQ(t, b)
		producer := openDSN(t, dsn, fastRetry)
		db := batontest.SQLDB(t, dsn)
		ctx := ctxT(t)
		consumer := session(t, consumerC)
		got := make(chan []*baton.Message, 1)
		go func() {
			ms, _ := consumer.Claim(context.Background(), "messages", baton.ClaimOptions{Wait: 20 * time.Second})
			got <- ms
		}()
		for deadline := time.Now().Add(10 * time.Second); baton.QueueWaiters(consumerC, "messages") == 0; { // the consumer waits first
			if time.Now().After(deadline) {
				t.Fatal("the consumer never waited")
			}
			time.Sleep(5 * time.Millisecond)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := producer.EnqueueTx(ctx, tx, "messages", []byte("hi")); err != nil {
			t.Fatal(err) // the waiting consumer does not block the producer
		}
		select {
		case ms := <-got:
			t.Fatalf("consumer woke before the commit: %v", payloads(ms))
		case <-time.After(200 * time.Millisecond):
		}
		committed := time.Now()
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		select {
		case ms := <-got:
			if len(ms) != 1 || string(ms[0].Payload) != "hi" {
				t.Fatalf("consumer got %v", payloads(ms))
			}
			t.Logf("consumer woke %v after the commit", time.Since(committed))
			ack(t, consumer, ms...)
		case <-time.After(15 * time.Second):
			t.Fatal("consumer never woke")
		}
		// Committed while the consumer is busy: found at its next claim.
		enqueue(t, producer, "messages", "while busy")
		ms := claim(t, consumer, "messages", baton.ClaimOptions{Wait: 5 * time.Second})
		if len(ms) != 1 || string(ms[0].Payload) != "while busy" {
			t.Fatalf("missed a message committed while busy: %v", payloads(ms))
		}
		// The consumer dies holding it: the message comes back.
		if err := consumer.Close(ctx); err != nil {
			t.Fatal(err)
		}
		next := session(t, consumerC)
		ms = claim(t, next, "messages", baton.ClaimOptions{Wait: 5 * time.Second})
		if len(ms) != 1 || ms[0].Attempt != 2 {
			t.Fatalf("message of the dead consumer: %+v", ms)
		}
		// The producer goes away: a waiting consumer is not stuck.
		producer.Close()
		_, err = next.Claim(ctx, "messages", baton.ClaimOptions{Wait: 300 * time.Millisecond})
		wantErr(t, err, baton.ErrEmpty)
	})
}

// childWorker is run by the test binary as a child process: it works the
// queue, appending "pid id" to a file per message, and optionally claims
// one message and hangs (to be killed).
func childWorker(dsn, queue, mode, file string) {
	ctx := context.Background()
	c, err := baton.Open(ctx, dsn)
	childMust(err)
	if mode == "hang" {
		var ms []*baton.Message
		s, err := c.NewSession(ctx)
		if err == nil {
			ms, err = s.Claim(ctx, queue, baton.ClaimOptions{Wait: 20 * time.Second})
		}
		childMust(err)
		childReady(fmt.Sprint("claimed ", ms[0].ID))
	}
	if mode == "block" || mode == "block-ordered" {
		// Two handlers (one in order) that say which message they
		// started and never end, until the test kills the process.
		opts := baton.WorkerOptions{Concurrency: 2}
		if mode == "block-ordered" {
			opts = baton.WorkerOptions{Mode: baton.Ordered}
		}
		fmt.Println("ready")
		childMust(c.Work(ctx, queue, func(ctx context.Context, m *baton.Message) error {
			fmt.Println("started", m.ID)
			select {}
		}, opts))
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		os.Exit(1)
	}
	fmt.Println("ready")
	err = c.Work(ctx, queue, func(ctx context.Context, m *baton.Message) error {
		time.Sleep(time.Millisecond)
		_, err := fmt.Fprintf(f, "%d %s\n", os.Getpid(), m.Payload)
		return err
	}, baton.WorkerOptions{Concurrency: 2, Drain: true})
	f.Close()
	c.Close()
	childMust(err)
}

// TestQueueWorkerKilled: a worker process killed with SIGKILL in the middle
// of a message loses nothing: the message is delivered again.
func TestQueueWorkerKilled(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		id := enqueue(t, c, "kq", "precious")
		child, out := startChild(t, "worker", dsn, "BATON_TEST_QUEUE=kq", "BATON_TEST_MODE=hang")
		line, _ := out.ReadString('\n')
		if strings.TrimSpace(line) != fmt.Sprintf("claimed %d", id) {
			t.Fatalf("child said %q", line)
		}
		s := session(t, c)
		_, err := s.Claim(ctxT(t), "kq", baton.ClaimOptions{})
		wantErr(t, err, baton.ErrEmpty) // claimed by the living child
		_ = child.Process.Kill()
		_ = child.Wait()
		ms := claim(t, s, "kq", baton.ClaimOptions{Wait: 20 * time.Second})
		if len(ms) != 1 || ms[0].ID != id || ms[0].Attempt != 2 {
			t.Fatalf("after the kill: %+v", ms)
		}
		ack(t, s, ms...)
	})
}

// TestWorkerKilledChargesOnlyStarted: a worker process (two handlers)
// killed with SIGKILL while a backlog waits held claims only for the
// messages its handlers started, and only those are charged an attempt:
// with an attempt limit of 1 they are dead letters (each ran once), and
// every other message is ready again with no attempt counted and no error
// recorded (DESIGN, Jobs: attempts count runs that started; a message is
// never dead-lettered by kills alone). The same for an Ordered worker,
// which claims an in-order batch: the messages behind the one it runs
// go back untouched.
func TestWorkerKilledChargesOnlyStarted(t *testing.T) {
	t.Run("parallel", func(t *testing.T) { killedChargesOnlyStarted(t, "block", 2) })
	t.Run("ordered", func(t *testing.T) { killedChargesOnlyStarted(t, "block-ordered", 1) })
}

func killedChargesOnlyStarted(t *testing.T, mode string, handlers int) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		const n = 10
		ids := enqueueMany(t, c, "kc", n, func(i int) baton.NewMessage {
			return baton.NewMessage{Payload: []byte(strconv.Itoa(i)), EnqueueOptions: baton.EnqueueOptions{MaxAttempts: 1}}
		})
		child, out := startChild(t, "worker", dsn, "BATON_TEST_QUEUE=kc", "BATON_TEST_MODE="+mode)
		if line, _ := out.ReadString('\n'); strings.TrimSpace(line) != "ready" {
			t.Fatalf("child said %q", line)
		}
		started := map[int64]bool{}
		for len(started) < handlers {
			line, err := out.ReadString('\n')
			var id int64
			if _, serr := fmt.Sscanf(line, "started %d", &id); serr != nil {
				t.Fatalf("child said %q (%v)", line, err)
			}
			started[id] = true
		}
		if st := stats(t, c, "kc"); mode == "block" && st.Claimed != 2 {
			t.Errorf("a worker with two busy handlers holds %d claims, want 2 (nothing claimed ahead): %+v", st.Claimed, st)
		}
		_ = child.Process.Kill()
		_ = child.Wait()
		waitFor(t, "the killed worker's claims to come back", func() bool { return stats(t, c, "kc").Claimed == 0 })
		for _, id := range ids {
			m := getMessage(t, c, id)
			switch {
			case started[id] && (m.State != baton.StateDead || m.Attempt != 1):
				t.Errorf("message %d, whose handler started: %s after %d attempts, want dead after 1", id, m.State, m.Attempt)
			case !started[id] && (m.State != baton.StateReady || m.Attempt != 0 || len(m.Errors) != 0):
				t.Errorf("message %d, never started: %s after %d attempts (%+v), want ready with none", id, m.State, m.Attempt, m.Errors)
			}
		}
	})
}

// TestQueueSeveralWorkerProcesses: three worker processes drain one queue;
// every message is processed exactly once.
func TestQueueSeveralWorkerProcesses(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		const n = 300
		enqueueMany(t, c, "many", n, func(i int) baton.NewMessage { return baton.NewMessage{Payload: []byte(strconv.Itoa(i))} })
		file := filepath.Join(t.TempDir(), "done")
		var children []*exec.Cmd
		for i := 0; i < 3; i++ {
			child, out := startChild(t, "worker", dsn, "BATON_TEST_QUEUE=many", "BATON_TEST_FILE="+file)
			if line, _ := out.ReadString('\n'); strings.TrimSpace(line) != "ready" {
				t.Fatalf("child said %q", line)
			}
			children = append(children, child)
		}
		for _, ch := range children {
			if err := ch.Wait(); err != nil {
				t.Fatalf("worker process: %v", err)
			}
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		pids := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			pid, msg, _ := strings.Cut(line, " ")
			pids[pid] = true
			count[msg]++
		}
		if len(count) != n {
			t.Fatalf("%d distinct messages processed, want %d", len(count), n)
		}
		var twice []string
		for m, k := range count {
			if k != 1 {
				twice = append(twice, m)
			}
		}
		sort.Strings(twice)
		if len(twice) > 0 {
			t.Fatalf("processed more than once: %v", twice)
		}
		t.Logf("%d processes shared the work", len(pids))
	})
}

// TestQueueConsumerSurvivesOutage: a consumer waiting while its database is
// unreachable (as during a restart) recovers by itself and gets the next
// message.
func TestQueueConsumerSurvivesOutage(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := serverDSN(t, b, "no server to lose")
		pdsn, p := viaProxy(t, dsn)
		consumerC := openDSN(t, pdsn, baton.Options{PollInterval: 200 * time.Millisecond})
		producer := openDSN(t, dsn)
		got := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := consumerC.Work(ctx, "outage", func(ctx context.Context, m *baton.Message) error {
				got <- nil
				return nil
			}, baton.WorkerOptions{})
			if err != nil {
				got <- err
			}
		}()
		time.Sleep(300 * time.Millisecond)
		p.Cut(true)
		time.Sleep(2 * time.Second)
		p.Restore()
		enqueue(t, producer, "outage", "after the restart")
		if err := await(t, got, 20*time.Second, "consumer did not recover"); err != nil {
			t.Fatal(err)
		}
	})
}
