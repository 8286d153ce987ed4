// Package failpoints scopes pingcap/failpoint to one simulated world.
//
// The library's package-level registry is global to the process, and
// testscript runs scenarios as parallel subtests of one process, so two
// scenarios enabling a failpoint at once would see each other's faults. Each
// world therefore owns a *failpoint.Failpoints of its own (the library's
// registry type, whose zero value is ready to use); code under test evaluates
// through the Set it was given. Production passes a nil Set: every failpoint is
// off and costs one nil check.
//
// Only deterministic terms are allowed ("return", "N*return", "off", and
// "K*off->N*return": pass K evaluations, then fire N times): the library's
// "N%" draws from a wall-clock-seeded source and "sleep" sleeps for real,
// and neither can be replayed.
//
// Every failpoint is listed in Catalog with what it simulates; a test in
// scenarios fails if one is defined but used by no scenario.
package failpoints

import (
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/pingcap/failpoint"
)

// Catalog names every failpoint and what it simulates. Names are
// <package>/<point>. Failpoints are for faults and for the few interleaving
// hooks a scenario needs between two statements of one event, never for
// mutants: those are files under scenarios/mutants, applied with
// `go test -overlay`, so production code carries no switch for them.
var Catalog = map[string]string{
	// Store faults.
	"store/first-reason-write": "the write that records a first reason on the row throws",
	"store/terminal-write":     "the attempt's terminal write throws (its outcome unknown)",
	"store/mark-running":       "the pending → running write throws with a storage error",
	"store/preparation-mark":   "the \"preparation starting\" write made before each preparation spawn throws with a storage error",
	"store/baseline-write":     "the write of the task storage's metadata baseline and base onto the attempt row throws with a storage error",
	"store/finding-write":      "the write of an audit's safety finding onto the attempt row throws with a storage error",
	"store/admit":              "the admission transaction throws",
	"store/commit":             "COMMIT fails, so the transaction rolls back and AfterCommit effects are dropped",
	"store/user-action":        "a user action throws after its writes, before COMMIT",
	"store/view":               "a read transaction (Store.View and the reads built on it: Task, Attempt, PresentContext, …) fails with a storage error before it begins",
	"store/requeue-read":       "step 6's read of the tasks to requeue (Tx.RequeueCandidates, in startup recovery's write transactions) fails with a storage error",
	"store/rebase-read":        "step 4's read of the recorded rebase markers (Tx.RebasesInProgress) fails with a storage error",
	"store/statement":          "the next SQL statement a transaction runs fails with a storage error (K*off->1*return: the (K+1)-th; return(\"step\"): a query fails after its first row, the others at once)",
	"store/before-commit":      "runs a scenario command after a write transaction's writes, right before its COMMIT (the transaction holds the Store's one connection: use commands that do not read the Store, such as d-cancelled or traced)",

	// Runner faults.
	"runner/diag-listing": "retention's listing of the diagnostics directory fails after reading every entry (os.ReadDir returns what it read with an I/O error)",

	// Hooks that let a scenario act between two statements of one event.
	"runner/before-launch-check":  "runs a scenario command right before the launch check",
	"runner/before-mark-running":  "runs a scenario command after D's start returned, before pending → running",
	"runner/before-publish":       "runs a scenario command after validation, right before the publication transaction",
	"runner/before-retention":     "runs a scenario command right before retention clears a referenced file's row",
	"runner/before-save-answer":   "runs a scenario command inside the off-loop work that saved an attempt's partial output, after the file is written, before the work's answer goes back to the loop (hold-answer keeps it back)",
	"runner/before-diag-sizes":    "runs a scenario command after retention listed the diagnostics directory, before it reads each listed file's size",
	"runner/before-run-continues": "runs a scenario command after a plan run's item freed its slot, before the run admits the next item",
	"app/before-requeue":          "runs a scenario command in startup's requeue step (lane I3), right before each task recovery listed is requeued; between two steps of startup, not inside an event",
	"app/before-stop-jobs":        "runs a scenario command in shutdown after step 3 (the write gate closed, request work and merges awaited), right before step 4 stops the jobs; between two steps of shutdown, not inside an event",
	"merge/before-final-reread":   "runs a scenario command after a merge's final GitHub check returned, before the irreversible boundary re-reads the state version, the review version and the closing flag",
}

// Set is one world's failpoint registry. A nil *Set has every failpoint off.
type Set struct {
	mu    sync.Mutex
	fps   failpoint.Failpoints
	on    map[string]bool
	hooks map[string]func()
	each  map[string]func()
}

// New returns an empty Set.
func New() *Set { return &Set{on: map[string]bool{}} }

// deterministic matches the terms Enable accepts: an optional count of
// evaluations passed over ("K*off->"), an optional count of firings, and
// return with an optional value that holds no ")" (so that no second term
// can hide inside it).
var deterministic = regexp.MustCompile(`^(\d+\*off->)?(\d+\*)?return(\([^)]*\))?$|^off$`)

// Enable turns a catalogued failpoint on with deterministic terms.
func (s *Set) Enable(name, terms string) error {
	if _, ok := Catalog[name]; !ok {
		return fmt.Errorf("unknown failpoint %q (see failpoints.Catalog)", name)
	}
	if !deterministic.MatchString(terms) {
		return fmt.Errorf("failpoint %s: terms %q are not replayable; use return, N*return, K*off->N*return or off", name, terms)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fps.Enable(name, terms); err != nil {
		return err
	}
	s.on[name] = true
	return nil
}

// Disable turns a failpoint off.
func (s *Set) Disable(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fps.Disable(name)
	delete(s.on, name)
}

// Eval reports whether the failpoint fires now, and its value. It is the only
// call code under test makes; on a nil Set it returns false at once.
func (s *Set) Eval(name string) (any, bool) {
	if s == nil {
		return nil, false
	}
	s.mu.Lock()
	on := s.on[name]
	s.mu.Unlock()
	if !on {
		return nil, false
	}
	v, err := s.fps.Eval(name)
	if err != nil || v == nil {
		// An "off" term evaluates to no value and no error: it passes
		// this evaluation over (return always has a value).
		return nil, false
	}
	return v, true
}

// Fire reports whether the failpoint fires now.
func (s *Set) Fire(name string) bool {
	_, ok := s.Eval(name)
	return ok
}

// Err returns an error naming the failpoint when it fires, else nil.
func (s *Set) Err(name string) error {
	if s.Fire(name) {
		return fmt.Errorf("failpoint %s", name)
	}
	return nil
}

// Enabled lists the failpoints switched on, sorted.
func (s *Set) Enabled() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.on {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SetHook registers fn to run each time code reaches the named point.
func (s *Set) SetHook(name string, fn func()) error {
	if _, ok := Catalog[name]; !ok {
		return fmt.Errorf("unknown failpoint %q (see failpoints.Catalog)", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hooks == nil {
		s.hooks = map[string]func(){}
	}
	s.hooks[name] = fn
	return nil
}

// Hook runs the callback registered for name, once, and removes it; then
// the persistent callbacks registered with OnEach.
func (s *Set) Hook(name string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	fn := s.hooks[name]
	delete(s.hooks, name)
	each := s.each[name]
	s.mu.Unlock()
	if fn != nil {
		fn()
	}
	if each != nil {
		each()
	}
}

// OnEach registers fn to run every time code reaches the named point (the
// crash-point sweep counts Store writes with it).
func (s *Set) OnEach(name string, fn func()) error {
	if _, ok := Catalog[name]; !ok {
		return fmt.Errorf("unknown failpoint %q (see failpoints.Catalog)", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.each == nil {
		s.each = map[string]func(){}
	}
	s.each[name] = fn
	return nil
}
