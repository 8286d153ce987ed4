package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Store is what the coordinator needs of the durable records. *store.Store
// implements it; the coordinator never reaches SQLite another way.
type Store interface {
	Update(fn func(*store.Tx) error) error
	View(fn func(*store.Tx) error) error
	UserAction(a store.Action, fn func(*store.Tx) (store.Response, error)) (store.Response, error)
	Admit(r store.AdmitRequest) (store.Admitted, error)
	AdmissionRefused(planKey string, err error)
	Task(planKey string) (store.Task, error)
	Attempt(id string) (store.Attempt, error)
	Attempts(planKey string) ([]store.Attempt, error)
	PresentContext(planKey string) (store.Context, error)
}

// Config is the runner block of the configuration.
type Config struct {
	Slots          int           // runner slots; codeboost 1.0 runs one task at a time (default 1)
	Kinds          []string      // attempt kinds this runner accepts (default: every kind)
	KindsWhy       string        // said after the refusal of a kind not in Kinds: why, and what to do
	AttemptTimeout time.Duration // each attempt's deadline (default 30 min)
	Budget         time.Duration // whole-task time budget (default 2 h)
	Root           string        // runner root; attempt directories live under <Root>/<owner>/attempts
	Owner          string        // runner owner token, 32 lowercase hex
	DiagnosticsDir string        // default <Root>; files go in <DiagnosticsDir>/<owner>/diagnostics
	DiagnosticsCap int64         // default 256 MiB
	ExportMax      int           // partial-output bytes (default 1 MiB)
	ExportTimeout  time.Duration // default 60 s
	// Profile is how D runs agents (image, command, credentials, limits),
	// passed on every start; the simulated D ignores it.
	Profile dadapter.AgentProfile
}

func (c *Config) defaults() error {
	if c.Slots <= 0 {
		c.Slots = 1
	}
	if len(c.Kinds) == 0 {
		c.Kinds = []string{words.KindPlanning, words.KindQuestion, words.KindReview, words.KindCheck,
			words.KindExecute, words.KindFix, words.KindRebaseFix}
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = 30 * time.Minute
	}
	if c.Budget <= 0 {
		c.Budget = 2 * time.Hour
	}
	if c.DiagnosticsDir == "" {
		c.DiagnosticsDir = c.Root
	}
	if c.DiagnosticsCap <= 0 {
		c.DiagnosticsCap = 256 << 20
	}
	if c.ExportMax <= 0 {
		c.ExportMax = 1 << 20
	}
	if c.ExportTimeout <= 0 {
		c.ExportTimeout = 60 * time.Second
	}
	if !ids.ValidToken(c.Owner) {
		return fmt.Errorf("runner: owner token %q is not 32 lowercase hex", c.Owner)
	}
	if c.Root == "" || !filepath.IsAbs(c.Root) {
		return fmt.Errorf("runner: root %q must be an absolute path", c.Root)
	}
	return nil
}

// Deps are the coordinator's injected parts.
type Deps struct {
	Store      Store
	Capability store.Capability // for settlement writes past the closed write gate
	D          dadapter.D
	Clock      Clock
	Loop       Loop
	IDs        ids.Source
	Failpoints *failpoints.Set // nil in production
	// Trace receives one line per decision, for scenarios and logs, with
	// the ID of the attempt it is about ("" for none). Optional.
	Trace func(attemptID, line string)
	// StopGroup stops a leftover preparation process group after proving
	// its saved identity again (startup recovery step 2b); nil makes
	// recovery fail closed on any saved group.
	StopGroup func(ctx context.Context, g dadapter.ProcessGroup) error
	// Output returns the live output sink for an attempt D is about to
	// start (dadapter.InvocationInput.Output): D owns it from then on and
	// closes it. Optional: nil, or a nil sink, and D discards the output.
	Output func(attemptID string) dadapter.OutputSink
	// Repository names the user's repository of a task (by plan key): the
	// source D materializes the task's recorded head from. Optional: nil
	// or "" leaves the source's repository empty (the simulated D).
	Repository func(planKey string) string
	// Prompt is what the agent of an attempt is asked to do, composed from
	// its row (the kind, the plan item). Optional: nil sends no prompt.
	Prompt func(a store.Attempt) string
}

// Coordinator is the runner: admission, slots, jobs, first reasons, launch,
// settlement, publication, retry, cancel and time limits. Every field below
// the line is owned by the loop; other goroutines read only the published
// snapshot.
type Coordinator struct {
	cfg  Config
	deps Deps
	fp   *failpoints.Set

	snap atomic.Pointer[snapshot] // published after each event; read by Status

	statusMu    sync.Mutex            // guards statusCache (Status runs on any goroutine)
	statusCache map[string]statusRows // the last status rows read, by plan key (statusRows)

	drained      chan struct{} // closed once closing and no job is left
	recoveryDone chan struct{} // closed when startup recovery ended

	recovering     bool           // owned by the loop
	recoveryReport RecoveryReport // owned by the loop until recoveryDone closes

	// owned by the loop
	open          bool // admission open; false before Open and once closing
	closing       bool // open → closing, never back
	drainedClosed bool
	slotsUsed     int                    // reserved or held slots
	jobs          map[string]*job        // by plan key; at most one per task
	markers       map[string]*marker     // by plan key; only startup recovery clears them
	retaining     bool                   // a retention runs (retention.go)
	retainAgain   bool                   // and another was asked for meanwhile
	runs          map[string]*planRun    // by plan key; a plan run in progress (planrun.go)
	owed          map[string]owedFinding // by plan key; safety findings whose save failed (owed.go)
	unreleased    bool                   // D reported resources it could not remove: closed to new work
}

// ErrShuttingDown is returned by every admission once the coordinator is
// closing.
var ErrShuttingDown = errors.New("the runner is shutting down")

// closedErr is admission's answer while the coordinator is not open. Once
// shutdown has begun that is ErrShuttingDown (the server's 503). Before
// then it has not opened yet: startup recovery is still running, or it
// ended and left something for a person (step 2d's older objects, step 7's
// unknown preparation). The server is not going away in either case, so
// the answer is a refusal that says which, rather than a "shutting down"
// that would send the person to wait for nothing.
func (c *Coordinator) closedErr() error {
	switch {
	case c.closing:
		return ErrShuttingDown
	case isClosed(c.recoveryDone):
		return &store.Refusal{Code: store.CodeNotOpen, Message: "The runner is not open: startup recovery left something for a person to handle. The server's log names it; start codeboost again once it is handled."}
	default:
		return &store.Refusal{Code: store.CodeNotOpen, Message: "The runner is not open yet: startup recovery is still running. Try again in a moment."}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// New builds a coordinator. It starts open only after Open is called, which
// production does at the end of startup recovery.
func New(cfg Config, deps Deps) (*Coordinator, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if deps.Store == nil || deps.D == nil || deps.Clock == nil || deps.Loop == nil || deps.IDs == nil {
		return nil, errors.New("runner: Store, D, Clock, Loop and IDs are required")
	}
	if deps.Capability == (store.Capability{}) {
		return nil, errors.New("runner: the Store's shutdown capability is required (settlement writes pass the closed write gate)")
	}
	c := &Coordinator{cfg: cfg, deps: deps, fp: deps.Failpoints, jobs: map[string]*job{}, markers: map[string]*marker{}, runs: map[string]*planRun{},
		owed:    map[string]owedFinding{},
		drained: make(chan struct{}), recoveryDone: make(chan struct{})}
	c.publish()
	return c, nil
}

// Open opens admission (startup recovery step 8). A closing coordinator
// never opens again.
func (c *Coordinator) Open(ctx context.Context) error {
	return c.call(ctx, func() {
		if !c.closing {
			c.open = true
			c.trace("runner open")
		}
	})
}

func (c *Coordinator) trace(format string, args ...any) {
	c.traceAttempt("", format, args...)
}

// traceAttempt is trace for a line about one attempt: logs carry its ID.
func (c *Coordinator) traceAttempt(attemptID, format string, args ...any) {
	if c.deps.Trace != nil {
		c.deps.Trace(attemptID, fmt.Sprintf(format, args...))
	}
}

// attemptDir is <root>/<owner>/attempts/<attemptId>; the ID has passed the
// UUID check before it gets here.
func (c *Coordinator) attemptDir(attemptID string) string {
	return filepath.Join(c.cfg.Root, c.cfg.Owner, "attempts", attemptID)
}

// marker replaces a job whose terminal write, start or removal failed. It
// holds the slot and blocks admission and retry for the task until startup
// recovery reconciles the row.
type marker struct {
	attemptID   string
	reason      string       // one of the four words of messages.md
	firstReason words.Reason // kept in memory when the write that would hold it failed
}

// snapshot is the immutable view of in-memory facts that Status reads.
type snapshot struct {
	open       bool
	slotsUsed  int
	unreleased bool
	tasks      map[string]taskFacts
	runs       map[string]bool // plan keys with a plan run in progress
}

type taskFacts struct {
	attemptID     string
	stopReason    words.Reason // first reason held in memory
	stopSaved     bool
	unresolved    string // marker reason
	markerAttempt string
}

// publish stores a fresh snapshot; called at the end of every event.
func (c *Coordinator) publish() {
	c.noteDrained()
	s := &snapshot{open: c.open, slotsUsed: c.slotsUsed, unreleased: c.unreleased, tasks: map[string]taskFacts{},
		runs: map[string]bool{}}
	for k := range c.runs {
		s.runs[k] = true
	}
	for k, j := range c.jobs {
		s.tasks[k] = taskFacts{attemptID: j.attemptID, stopReason: j.h.First, stopSaved: j.reasonSaved}
	}
	for k, m := range c.markers {
		// No job shares a marker's task (reserve refuses one, and toMarker
		// drops the job), and Status shows no stopRequested beside an
		// unresolved marker: the marker's facts are its own two.
		s.tasks[k] = taskFacts{unresolved: m.reason, markerAttempt: m.attemptID}
	}
	c.snap.Store(s)
}

// SlotsUsed reports the slots held right now (from the snapshot).
func (c *Coordinator) SlotsUsed() int { return c.snap.Load().slotsUsed }

func sortStrings(s []string) { sort.Strings(s) }
