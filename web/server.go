package web

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// DrainLimit is how long shutdown step 2 waits for admitted requests: at
// most 14.5 s, below the 15 s request timeout.
const DrainLimit = 14500 * time.Millisecond

// RequestTimeout bounds one request's headers and body in production (the
// real server's own timers, not the injected clock's).
const RequestTimeout = 15 * time.Second

// Options configure a Server. Runner, Store, Clock and Tasks are required.
type Options struct {
	Runner *runner.Coordinator
	Store  *store.Store
	Clock  runner.Clock
	Tasks  []Task
	Log    *slog.Logger // nil discards

	// Output is the live output of running attempts (nil: none is shown).
	Output Output
	// Diagnostics reads a stopped attempt's saved partial output by its
	// diagnostic_ref (nil: no diff view).
	Diagnostics func(ref string) ([]byte, error)
	// Head reads a configured task's repository HEAD for the review load
	// (nil: the load records no history). It is not asked once the task
	// has runner commits: the Store's recorded head is the task's head
	// then (the contract's "Runner-owned repository", Review).
	Head func(Task) (string, error)
	// CommitDiff writes the diff of a runner commit (a completed attempt's
	// commit on its base) from the runner-owned repository to w as it is
	// read, at most maxBytes, and reports a cut; an error before the first
	// write is answered as one. nil: only saved partial output is shown.
	CommitDiff func(ctx context.Context, w io.Writer, t Task, base, commit string, maxBytes int) (cut bool, err error)
	// DrainLimit overrides DrainLimit (tests); zero means DrainLimit.
	DrainLimit time.Duration
	// Static replaces the embedded review screen (the browser tests serve
	// a mutated page script through it); nil serves the embedded one.
	Static fs.FS
	// Merges is the merge coordinator (nil: no merge routes, and the
	// review load shows no merge).
	Merges Merges
	// Questions is Ask, the question coordinator (nil: the server has no
	// question routes).
	Questions Questions
	// Planning is the suggestion coordinator (nil: the server has no
	// planning routes; see plan_requests_api.go).
	Planning Planning
	// Demo is shown in the screen's header, so nobody mistakes the demo's
	// simulated agent for a real one.
	Demo bool
}

// Output is where the server reads a running attempt's live output: the
// kept tail, then each later chunk, until the attempt's output ends or the
// follower falls behind (updates closes). stop ends the follow.
type Output interface {
	Follow(attemptID string) (backlog []byte, updates <-chan []byte, stop func(), ok bool)
	Close()
}

// Server is the review server. Its zero value is not usable; call New.
type Server struct {
	opt   Options
	log   *slog.Logger
	tasks map[string]Task
	names []string // configuration order, for the screen
	mux   *http.ServeMux
	// diffReads holds one token per diff view being read (maxDiffReads).
	diffReads chan struct{}
	metrics   *metrics

	mu       sync.Mutex
	stopping bool                  // step 1 has run: new requests get 503
	active   map[*request]struct{} // admitted requests that have not returned
	idle     chan struct{}         // closed once stopping and no request is active
	drained  chan struct{}         // closed once the drain ended: no request active, or the drain limit passed; nil before the drain
	httpSrv  *http.Server          // nil when the handler is called in-process
	served   chan struct{}         // closed when Serve returns
	shut     chan struct{}         // closed when step 3's http.Server.Shutdown returns; nil before step 3
	unlisten chan struct{}         // closed once Shutdown has closed the listeners
}

// New checks the options and builds the server.
func New(opt Options) (*Server, error) {
	if opt.Runner == nil || opt.Store == nil || opt.Clock == nil {
		return nil, errors.New("web: Runner, Store and Clock are required")
	}
	if opt.DrainLimit == 0 {
		opt.DrainLimit = DrainLimit
	}
	s := &Server{opt: opt, log: opt.Log, tasks: map[string]Task{}, active: map[*request]struct{}{}, diffReads: make(chan struct{}, maxDiffReads),
		idle: make(chan struct{}), metrics: newMetrics()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, t := range opt.Tasks {
		if err := CheckTaskName(t.Name); err != nil {
			return nil, err
		}
		if _, dup := s.tasks[t.Name]; dup {
			return nil, errors.New("web: task " + t.Name + " is configured twice")
		}
		s.tasks[t.Name] = t
		s.names = append(s.names, t.Name)
	}
	s.routes()
	return s, nil
}

// Handler is the server's whole HTTP surface, with admission and drain
// tracking around every route.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Serve serves on l until Close. It returns nil after a shutdown.
func (s *Server) Serve(l net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: RequestTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return nil
	}
	s.httpSrv, s.served, s.unlisten = srv, make(chan struct{}), make(chan struct{})
	// Shutdown starts its OnShutdown functions only after it closed the
	// listeners: AbortRequests waits for this one, so that step 3 has
	// stopped accepting connections when it returns.
	unlisten := s.unlisten
	var once sync.Once // a second Shutdown runs the OnShutdown functions again
	srv.RegisterOnShutdown(func() { once.Do(func() { close(unlisten) }) })
	s.mu.Unlock()
	defer close(s.served)
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type connKey struct{}

// serveHTTP admits a request, or answers 503 once stopping is set (step 1).
// An admitted request is tracked until its handler returns, so the drain
// can wait for it and step 3 can abort it.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	req := newRequest(w, r, s.Stopping)
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		req.fail(http.StatusServiceUnavailable, codeShuttingDown, words.ServerShuttingDown)
		if r.Method == http.MethodPost {
			s.metrics.refused(http.StatusServiceUnavailable)
		}
		return
	}
	s.active[req] = struct{}{}
	s.mu.Unlock()
	defer s.finish(req)
	s.mux.ServeHTTP(req.w, req.r)
	if r.Method == http.MethodPost {
		s.metrics.refused(req.w.status)
	}
}

func (s *Server) finish(req *request) {
	req.cancel()
	s.mu.Lock()
	delete(s.active, req)
	if s.stopping && len(s.active) == 0 {
		closeOnce(s.idle)
		if s.drained != nil {
			closeOnce(s.drained)
		}
	}
	s.mu.Unlock()
}

func closeOnce(c chan struct{}) {
	if !isClosed(c) {
		close(c)
	}
}

// SetStopping is step 1's server half: from now on every new request gets
// 503 "The review server is shutting down.", no merge is admitted and no
// merge command is sent, every reply says Connection: close, and every
// live-output stream closes so that no stream holds the drain open.
// Admitted requests run on.
//
// The listener and the idle keep-alive connections stay open until step 3
// (AbortRequests): a request on a new connection, or the next request on a
// kept-alive one, is answered 503 during the drain instead of being
// refused or cut without a reply (issue 19). Each such reply closes its
// connection, so none is left for step 3 but the idle ones.
//
// The merge coordinator's closing flag is set first, in the same turn: a
// merge request admitted before this (draining) that reads stopping
// afterwards finds the coordinator closed too, so the coordinator's own
// flag is the one check postMerge needs ("no merge command is sent after
// it").
func (s *Server) SetStopping() {
	if s.opt.Merges != nil {
		s.opt.Merges.Stop()
	}
	s.mu.Lock()
	s.stopping = true
	if len(s.active) == 0 {
		closeOnce(s.idle)
	}
	s.mu.Unlock()
	if s.opt.Output != nil {
		s.opt.Output.Close()
	}
}

// BeginDrain is step 2: it starts the wait for the admitted requests, up
// to the drain limit on the injected clock, and returns a channel closed once the drain
// has ended: no admitted request is left, or the drain limit has passed.
// Nothing waits on a goroutine of the server's own: the channel is closed
// by whatever ends the drain (the last request returning, or the limit's
// timer on the injected clock), so a simulated clock decides exactly when.
// The timer is never stopped: firing after the drain ended changes nothing.
func (s *Server) BeginDrain() <-chan struct{} {
	s.mu.Lock()
	drained := make(chan struct{})
	s.drained = drained
	if len(s.active) == 0 {
		close(drained)
	}
	s.mu.Unlock()
	s.opt.Clock.AfterFunc(s.opt.DrainLimit, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if n := len(s.active); n > 0 && !isClosed(drained) {
			s.log.Warn("shutdown: requests still running at the drain limit", "requests", n)
		}
		closeOnce(drained)
	})
	return drained
}

// DrainEnded reports whether step 2 has begun and whether its drain has
// ended.
func (s *Server) DrainEnded() (ended, begun bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drained == nil {
		return false, false
	}
	return isClosed(s.drained), true
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// AbortRequests is step 3's first half: stop accepting connections and
// close the idle ones, then abort the context of every request still
// running and destroy those still reading a body, before the write gate
// closes.
func (s *Server) AbortRequests() {
	s.mu.Lock()
	reqs := make([]*request, 0, len(s.active))
	for r := range s.active {
		reqs = append(reqs, r)
	}
	srv, unlisten := s.httpSrv, s.unlisten
	var shut chan struct{}
	if srv != nil && s.shut == nil {
		shut = make(chan struct{})
		s.shut = shut
	}
	s.mu.Unlock()
	if shut != nil {
		// Shutdown closes the listeners and the idle connections, then
		// keeps closing connections as they go idle; it returns once none
		// is left, at the latest when Close (step 6) ends them all.
		go func() {
			defer close(shut)
			srv.Shutdown(context.Background()) //nolint:errcheck // its only error is the context's, never cancelled
		}()
		<-unlisten
	}
	for _, r := range reqs {
		r.cancel()
		r.destroyIfReading()
	}
}

// RequestsEnded is step 3's last half, after the write gate closed: a
// channel closed once every aborted request has returned (a write that
// reaches the gate now answers 503). The merge coordinator's merges in
// flight are the caller's to await next (their settlement holds the
// shutdown capability).
func (s *Server) RequestsEnded() <-chan struct{} { return s.idle }

// Close is step 6: close every connection and wait for Serve to return.
func (s *Server) Close() {
	s.mu.Lock()
	srv, served, shut := s.httpSrv, s.served, s.shut
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
		<-served
	}
	if shut != nil {
		<-shut
	}
}

// Active is the number of admitted requests that have not returned.
func (s *Server) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.active)
}

// Stopping reports whether step 1 has run.
func (s *Server) Stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}
