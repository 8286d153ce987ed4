package app

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// recorder keeps, in order, what the shutdown hooks saw and every log line.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.add("log " + strings.TrimSuffix(strings.TrimPrefix(string(p), "codeboost: "), "\n"))
	return len(p), nil
}

// orderServer and orderPublisher record each shutdown hook, with whether
// the Store's write gate is still open at that moment.
type orderServer struct {
	r *recorder
	a *App
}

func (s orderServer) gate() string {
	if err := s.a.store.Update(func(*store.Tx) error { return nil }); errors.Is(err, store.ErrShuttingDown) {
		return "gate closed"
	}
	return "gate open"
}
func (s orderServer) SetStopping() { s.r.add("server stopping") }
func (s orderServer) BeginDrain() <-chan struct{} {
	s.r.add("server drain, " + s.gate())
	return closed()
}
func (s orderServer) AbortRequests() { s.r.add("server abort requests, " + s.gate()) }
func (s orderServer) RequestsEnded() <-chan struct{} {
	s.r.add("server await request work, " + s.gate())
	return closed()
}
func (s orderServer) Close() { s.r.add("server close") }

type orderPublisher struct{ r *recorder }

func (p orderPublisher) Abort() { p.r.add("publisher abort") }
func (p orderPublisher) Await() { p.r.add("publisher await") }

// TestShutdownFollowsTheContractsOrder: the server and the publisher plug
// into shutdown at the contract's steps — stopping and the publisher's abort
// in step 1's turn, the drain (2) and the publishes (2a) before the write
// gate closes, the requests aborted before and request-owned work awaited
// after the gate closes (3), the server closed and Ask's close awaited
// (6), with Ask's admission stopped in step 1's turn — and the Store is
// closed and the lock released after (7, 8). With no job the coordinator
// reports every job ended (4, 5, 5a) in step 1's turn already.
func TestShutdownFollowsTheContractsOrder(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "codeboost.db")
	r := &recorder{}
	log, err := NewLogger(r, LogText)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{DB: db, Check: true, Log: log, Publisher: orderPublisher{r}})
	if err != nil {
		t.Fatal(err)
	}
	a.server = orderServer{r, a}
	if err := a.Run(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"log stopping",
		"server stopping",
		"log merge: closing",
		"log ask: admission stopped",
		"publisher abort",
		"log shutdown: admission closed",
		"log shutdown: every job ended (0 unresolved)", // no job: drained in step 1's turn
		"server drain, gate open",
		"publisher await",
		"server abort requests, gate open",
		"server await request work, gate closed",
		"server close",
		"log ask: close: 0 questions in flight",
		"log ask: closed",
		"log suggest: shutdown: admission closed; aborting 0",
		"log suggest: shutdown: every provider settled",
	}
	i := slices.Index(r.events, want[0])
	if i < 0 || !slices.Equal(r.events[i:], want) {
		t.Fatalf("shutdown ran\n  %s\nwant it to end with\n  %s", strings.Join(r.events, "\n  "), strings.Join(want, "\n  "))
	}
	if a.store != nil || a.lock != nil || a.loop != nil {
		t.Errorf("after shutdown: store %v, lock %v, loop %v; want all given back", a.store, a.lock, a.loop)
	}
	// Step 8 really released the OS lock: the next start takes it.
	b, err := New(Options{DB: db, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Run(); err != nil {
		t.Fatalf("the next start: %v", err)
	}
}

// closed is a channel that is already closed: a drain with nothing to wait for.
func closed() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
