// Package livelog holds the live output of running attempts for the people
// watching them (the review screen's stream): D writes each attempt's output
// into a sink (dadapter.OutputSink) and any number of followers read it.
//
// It is bounded on both sides and keeps nothing for long. Each attempt keeps
// only a tail of its output (tailBytes), so a follower who arrives late sees
// the recent lines first; a follower that does not keep up is disconnected
// rather than waited for, so D's capture is never slowed by a browser; and
// when the sink closes (the capture stopped) every follower's stream ends
// and the tail is dropped: the bounded diagnostic in the Store is the only
// record of an attempt's output. Close ends every stream at once, for
// shutdown step 1, so that no stream holds the HTTP drain open.
//
// A Hub is safe for concurrent use: D writes from its capture goroutines,
// HTTP handlers follow from theirs. It may import dadapter and the standard
// library only; the application, the web server and the demo use it.
package livelog

import (
	"bytes"
	"errors"
	"sort"
	"sync"

	"github.com/codeboost/codeboost/dadapter"
)

// DefaultTail is the tail kept per attempt when NewHub is given none.
const DefaultTail = 64 << 10

// FollowerQueue is how many chunks a follower may fall behind before it is
// disconnected. A chunk is one Write of D's, so a follower holds at most
// this many of D's reads.
const FollowerQueue = 256

// ErrClosed is a sink's answer to a Write after its Close.
var ErrClosed = errors.New("livelog: the output sink is closed")

// Hub is the live output of every running attempt, by attempt ID.
type Hub struct {
	tail int // bytes kept per attempt; > 0

	mu     sync.Mutex
	closed bool                   // guarded by mu: Close was called, no new follower
	logs   map[string]*attemptLog // guarded by mu: attempts whose sink is open
}

// attemptLog is one attempt's kept tail and its followers; every field is
// guarded by the hub's mu.
type attemptLog struct {
	buf       []byte // the kept tail: at most tail bytes, from a line start when possible
	open      bool   // its sink has not closed
	followers map[*follower]struct{}
}

// follower is one reader of an attempt's stream; ch is closed once, by
// whichever comes first: its stop, its falling behind, the sink's Close or
// the hub's.
type follower struct {
	ch chan []byte
}

// NewHub returns a hub keeping the last tailBytes of each attempt's output
// (DefaultTail when tailBytes <= 0).
func NewHub(tailBytes int) *Hub {
	if tailBytes <= 0 {
		tailBytes = DefaultTail
	}
	return &Hub{tail: tailBytes, logs: map[string]*attemptLog{}}
}

// Sink returns the output sink for an attempt D is about to start
// (runner.Deps.Output). The attempt is running, for Running and Follow,
// until the sink closes. An attempt ID is started at most once; if a sink
// for it is still open, that one is ended first (its followers' streams
// end and it takes no more writes).
func (h *Hub) Sink(attemptID string) dadapter.OutputSink {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old := h.logs[attemptID]; old != nil {
		old.end()
	}
	l := &attemptLog{open: true, followers: map[*follower]struct{}{}}
	h.logs[attemptID] = l
	return &sink{h: h, id: attemptID, l: l}
}

// Follow starts following a running attempt's output: backlog is the kept
// tail (a copy), updates receives every later chunk in order. Chunks are
// shared between followers and must not be modified. updates is closed when
// the follower stops, falls more than FollowerQueue chunks behind (it may
// follow again and gets the tail anew), or the output ends (the sink or the
// hub closed). ok is false, with a closed updates channel, when the attempt
// has no open sink (not started yet, or finished) or the hub is closed.
// stop may be called any number of times, from any goroutine.
func (h *Hub) Follow(attemptID string) (backlog []byte, updates <-chan []byte, stop func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.logs[attemptID]
	if h.closed || l == nil {
		ch := make(chan []byte)
		close(ch)
		return nil, ch, func() {}, false
	}
	f := &follower{ch: make(chan []byte, FollowerQueue)}
	l.followers[f] = struct{}{}
	stop = func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		l.drop(f)
	}
	return bytes.Clone(l.buf), f.ch, stop, true
}

// Running lists the attempts whose sink is open, sorted.
func (h *Hub) Running() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]string, 0, len(h.logs))
	for id := range h.logs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Close is shutdown step 1 for the streams: every follower's channel closes
// and Follow refuses from now on. Sinks stay open and keep taking D's
// writes without blocking until D closes them; their tails are dropped then.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, l := range h.logs {
		for f := range l.followers {
			l.drop(f)
		}
	}
}

// drop ends one follower's stream, once.
func (l *attemptLog) drop(f *follower) {
	if _, ok := l.followers[f]; ok {
		delete(l.followers, f)
		close(f.ch)
	}
}

// end is the sink's close: no more writes, every stream ends, the tail goes.
func (l *attemptLog) end() {
	l.open = false
	for f := range l.followers {
		l.drop(f)
	}
	l.buf = nil
}

// keep appends p to the kept tail and cuts the tail to max bytes, at the
// start of a line when one begins in the part that is kept (never leaving
// it empty); a single line longer than max is cut in its middle.
func (l *attemptLog) keep(p []byte, max int) {
	if len(p) > max {
		// Only p's own end can survive: one byte more than max is kept so
		// that the cut below can see whether it falls on a line start.
		p = p[len(p)-max-1:]
		l.buf = l.buf[:0]
	}
	l.buf = append(l.buf, p...)
	over := len(l.buf) - max
	if over <= 0 {
		return
	}
	cut := over
	if l.buf[cut-1] != '\n' {
		if i := bytes.IndexByte(l.buf[cut:], '\n'); i >= 0 && cut+i+1 < len(l.buf) {
			cut += i + 1
		}
	}
	l.buf = l.buf[:copy(l.buf, l.buf[cut:])]
}

// sink is one attempt's dadapter.OutputSink.
type sink struct {
	h  *Hub
	id string
	l  *attemptLog
}

// Write keeps p in the tail and hands a copy to every follower that has
// room; a follower that has none is disconnected. It never blocks on a
// follower.
func (s *sink) Write(p []byte) (int, error) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if !s.l.open {
		return 0, ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	s.l.keep(p, s.h.tail)
	if len(s.l.followers) > 0 {
		chunk := bytes.Clone(p)
		for f := range s.l.followers {
			select {
			case f.ch <- chunk:
			default: // behind by FollowerQueue chunks: disconnected, not waited for
				s.l.drop(f)
			}
		}
	}
	return len(p), nil
}

// Close ends the attempt's output: every follower's stream ends and the
// tail is dropped. A second Close does nothing.
func (s *sink) Close() error {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if !s.l.open {
		return nil
	}
	s.l.end()
	if s.h.logs[s.id] == s.l {
		delete(s.h.logs, s.id)
	}
	return nil
}
