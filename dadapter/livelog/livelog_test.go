package livelog

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// drain reads every chunk already queued on ch, without waiting, and
// reports whether ch is closed.
func drain(ch <-chan []byte) (got []byte, closed bool) {
	for {
		select {
		case c, ok := <-ch:
			if !ok {
				return got, true
			}
			got = append(got, c...)
		default:
			return got, false
		}
	}
}

func write(t *testing.T, s interface{ Write([]byte) (int, error) }, text string) {
	t.Helper()
	if n, err := s.Write([]byte(text)); n != len(text) || err != nil {
		t.Fatalf("Write(%q) = %d, %v", text, n, err)
	}
}

// TestFollowGetsTheTailThenLaterChunks: a follower sees what was written
// before it came (the backlog) and then each later chunk, in order, once.
func TestFollowGetsTheTailThenLaterChunks(t *testing.T) {
	h := NewHub(0)
	s := h.Sink("A")
	write(t, s, "reading src/parse.go\n")
	backlog, updates, stop, ok := h.Follow("A")
	defer stop()
	if !ok || string(backlog) != "reading src/parse.go\n" {
		t.Fatalf("Follow = %q, %v", backlog, ok)
	}
	write(t, s, "running go test ")
	write(t, s, "./...\n")
	got, closed := drain(updates)
	if string(got) != "running go test ./...\n" || closed {
		t.Errorf("updates = %q (closed %v)", got, closed)
	}
	if b2, _, stop2, _ := h.Follow("A"); string(b2) != "reading src/parse.go\nrunning go test ./...\n" {
		t.Errorf("a second follower's backlog = %q", b2)
	} else {
		stop2()
	}
}

// TestTailIsBoundedAndCutAtALine: the backlog never exceeds the tail, and
// starts at a line when one starts in the kept part; a line longer than
// the tail is cut in its middle.
func TestTailIsBoundedAndCutAtALine(t *testing.T) {
	cases := []struct {
		name   string
		writes []string
		want   string
	}{
		{"fits", []string{"ab\n", "cd\n"}, "ab\ncd\n"},
		{"cut moves to the next line", []string{"line one\n", "line two\n", "3\n"}, "3\n"},
		{"cut already at a line start", []string{"0123456789\n", "abcdefghi\n"}, "abcdefghi\n"},
		{"cut mid-line when only the last byte is a newline", []string{"0123456789\n", "abcdefghijklmn\n"}, "fghijklmn\n"},
		{"one write longer than the tail", []string{"x\n", strings.Repeat("y", 20) + "\nzz\n"}, "zz\n"},
		{"one line longer than the tail", []string{strings.Repeat("q", 25)}, strings.Repeat("q", 10)},
		{"long write ending right after a newline", []string{"hello world\n0123456789"}, "0123456789"},
	}
	for _, c := range cases {
		h := NewHub(10)
		s := h.Sink("A")
		for _, w := range c.writes {
			write(t, s, w)
		}
		backlog, _, stop, _ := h.Follow("A")
		stop()
		if string(backlog) != c.want || len(backlog) > 10 {
			t.Errorf("%s: backlog %q, want %q", c.name, backlog, c.want)
		}
	}
}

// TestTailStaysBoundedOverALongRun: many writes keep the tail, and the
// memory behind it, bounded.
func TestTailStaysBoundedOverALongRun(t *testing.T) {
	h := NewHub(1000)
	s := h.Sink("A")
	for i := range 10000 {
		write(t, s, fmt.Sprintf("line %d of the agent's output\n", i))
	}
	l := h.logs["A"]
	if len(l.buf) > 1000 || cap(l.buf) > 4*1000 {
		t.Errorf("tail holds %d bytes in %d", len(l.buf), cap(l.buf))
	}
	if !bytes.HasPrefix(l.buf, []byte("line ")) || !bytes.HasSuffix(l.buf, []byte("line 9999 of the agent's output\n")) {
		t.Errorf("tail %q", l.buf)
	}
}

// TestSlowFollowerIsDisconnectedNotWaitedFor: a follower that reads
// nothing is cut off after FollowerQueue chunks; the writer never blocks,
// and a follower that keeps up gets everything.
func TestSlowFollowerIsDisconnectedNotWaitedFor(t *testing.T) {
	h := NewHub(0)
	s := h.Sink("A")
	_, slow, stopSlow, _ := h.Follow("A")
	defer stopSlow()
	_, fast, stopFast, _ := h.Follow("A")
	defer stopFast()
	var want, got []byte
	for i := range FollowerQueue + 10 {
		line := fmt.Sprintf("%d\n", i)
		write(t, s, line) // would deadlock here if it waited for slow
		want = append(want, line...)
		more, closed := drain(fast)
		if closed {
			t.Fatalf("the fast follower was disconnected at chunk %d", i)
		}
		got = append(got, more...)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("fast follower got %q", got)
	}
	queued, closed := drain(slow)
	if !closed || bytes.Count(queued, []byte("\n")) != FollowerQueue {
		t.Errorf("slow follower: %d chunks queued, closed %v; want %d and closed", bytes.Count(queued, []byte("\n")), closed, FollowerQueue)
	}
	// It may follow again: the tail anew.
	backlog, _, stop, ok := h.Follow("A")
	defer stop()
	if !ok || !bytes.Equal(backlog, want) {
		t.Errorf("following again: %v, backlog of %d bytes", ok, len(backlog))
	}
}

// TestSinkCloseEndsEveryStreamAndDropsTheTail: when D's capture stops,
// every stream ends, the attempt is no longer running and nothing of its
// output is kept or followed.
func TestSinkCloseEndsEveryStreamAndDropsTheTail(t *testing.T) {
	h := NewHub(0)
	s := h.Sink("A")
	other := h.Sink("B")
	write(t, s, "working\n")
	_, updates, stop, _ := h.Follow("A")
	if got := h.Running(); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("Running = %v", got)
	}
	write(t, s, "done\n")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, closed := drain(updates); string(got) != "done\n" || !closed {
		t.Errorf("after Close: %q, closed %v", got, closed)
	}
	stop() // after the end: nothing to do
	stop()
	if got := h.Running(); !slices.Equal(got, []string{"B"}) {
		t.Errorf("Running = %v", got)
	}
	if _, ok := h.logs["A"]; ok {
		t.Error("the tail of a closed sink is still kept")
	}
	if b, ch, stop, ok := h.Follow("A"); ok || b != nil {
		t.Errorf("Follow after the end = %q, %v", b, ok)
	} else if _, closed := drain(ch); !closed {
		t.Error("a refused Follow's channel is open")
	} else {
		stop()
	}
	if n, err := s.Write([]byte("late\n")); n != 0 || err != ErrClosed {
		t.Errorf("Write after Close = %d, %v", n, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	write(t, other, "B is unaffected\n")
}

// TestFollowStopEndsOnlyThatStream: a follower that leaves gets its
// channel closed; the attempt and the other followers go on.
func TestFollowStopEndsOnlyThatStream(t *testing.T) {
	h := NewHub(0)
	s := h.Sink("A")
	_, a, stopA, _ := h.Follow("A")
	_, b, stopB, _ := h.Follow("A")
	defer stopB()
	stopA()
	stopA()
	write(t, s, "x\n")
	if got, closed := drain(a); got != nil || !closed {
		t.Errorf("stopped follower: %q, closed %v", got, closed)
	}
	if got, closed := drain(b); string(got) != "x\n" || closed {
		t.Errorf("other follower: %q, closed %v", got, closed)
	}
}

// TestHubCloseEndsStreamsButNotSinks is shutdown step 1: every stream
// closes and no new one opens, while D keeps writing (never blocked) until
// it stops the agents and closes its sinks.
func TestHubCloseEndsStreamsButNotSinks(t *testing.T) {
	h := NewHub(0)
	s := h.Sink("A")
	_, updates, stop, _ := h.Follow("A")
	defer stop()
	h.Close()
	if _, closed := drain(updates); !closed {
		t.Error("a stream is still open after Close")
	}
	if _, _, _, ok := h.Follow("A"); ok {
		t.Error("Follow after Close succeeded")
	}
	write(t, s, "still stopping\n")
	late := h.Sink("B") // an attempt D starts while shutdown goes on
	write(t, late, "x\n")
	if got := h.Running(); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("Running = %v", got)
	}
	s.Close()
	late.Close()
	if got := h.Running(); len(got) != 0 {
		t.Errorf("Running = %v", got)
	}
}

// TestSinkAgainEndsTheOldOne: an attempt ID is started once; a second sink
// for it ends the first, whose writes then go nowhere.
func TestSinkAgainEndsTheOldOne(t *testing.T) {
	h := NewHub(0)
	old := h.Sink("A")
	_, updates, stop, _ := h.Follow("A")
	defer stop()
	s := h.Sink("A")
	if _, closed := drain(updates); !closed {
		t.Error("the old sink's stream is still open")
	}
	if _, err := old.Write([]byte("old\n")); err != ErrClosed {
		t.Errorf("old sink Write: %v", err)
	}
	write(t, s, "new\n")
	old.Close() // must not end the new one
	if b, _, stop, ok := h.Follow("A"); !ok || string(b) != "new\n" {
		t.Errorf("Follow = %q, %v", b, ok)
	} else {
		stop()
	}
}

// TestConcurrentWritersAndFollowers is for -race: D writing to several
// sinks while followers come, read and go, and the hub closes.
func TestConcurrentWritersAndFollowers(t *testing.T) {
	h := NewHub(256)
	var wg sync.WaitGroup
	for a := range 4 {
		id := fmt.Sprintf("attempt-%d", a)
		s := h.Sink(id)
		wg.Go(func() {
			for i := range 500 {
				fmt.Fprintf(s, "%s line %d\n", id, i)
			}
			s.Close()
		})
		for range 3 {
			wg.Go(func() {
				for range 20 {
					backlog, updates, stop, ok := h.Follow(id)
					if ok && len(backlog) > 256 {
						t.Errorf("backlog of %d bytes", len(backlog))
					}
					for n := 0; n < 5; n++ {
						if _, open := <-updates; !open {
							break
						}
					}
					stop()
				}
			})
		}
	}
	wg.Go(func() { h.Running() })
	wg.Wait()
	h.Close()
	if got := h.Running(); len(got) != 0 {
		t.Errorf("Running = %v after every sink closed", got)
	}
}
