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
// Only deterministic terms are allowed ("return", "N*return", "off"): the
// library's "N%" draws from a wall-clock-seeded source and "sleep" sleeps for
// real, and neither can be replayed.
//
// Every failpoint is listed in Catalog with what it simulates; a test in
// scenarios fails if one is defined but used by no scenario.
package failpoints

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/pingcap/failpoint"
)

// Catalog names every failpoint and what it simulates. Names are
// <package>/<point>; "mutant/<name>" points switch off one guard each so that a
// test can show that the scenarios guarding it bite.
var Catalog = map[string]string{
	// Store faults.
	"store/first-reason-write": "the write that records a first reason on the row throws",
	"store/terminal-write":     "the attempt's terminal write throws (its outcome unknown)",
	"store/mark-running":       "the pending → running write throws with a storage error",
	"store/admit":              "the admission transaction throws",
	"store/commit":             "COMMIT fails, so the transaction rolls back and AfterCommit effects are dropped",
	"store/user-action":        "a user action throws after its writes, before COMMIT",
	"store/before-commit":      "runs a scenario command after a write transaction's writes, right before its COMMIT (the transaction holds the Store's one connection: use commands that do not read the Store, such as d-cancels or traced)",

	// Hooks that let a scenario act between two statements of one event.
	"runner/before-launch-check":  "runs a scenario command right before the launch check",
	"runner/before-mark-running":  "runs a scenario command after D's start returned, before pending → running",
	"runner/before-publish":       "runs a scenario command after validation, right before the publication transaction",
	"runner/before-retention":     "runs a scenario command right before retention clears a referenced file's row",
	"runner/before-run-continues": "runs a scenario command after a plan run's item freed its slot, before the run admits the next item",

	// Mutants guarding settlement and stops (runner/stop.go, settlement.go,
	// store/tasks.go); each removes one guard.
	"mutant/lifecycle-bumps-generation":    "an attempt's own lifecycle change also increases the context generation",
	"mutant/deadline-ends-running":         "the attempt deadline ends a running attempt before D settles (a second timer that settles early)",
	"mutant/error-ignores-context":         "settlement maps a provider error to failed without checking the captured context",
	"mutant/publish-ignores-memory-reason": "publication does not skip when a first reason is held only in memory",

	// Mutants: each removes one guard.
	"mutant/no-first-reason-wins":        "settlement ignores the first reason and maps D's result alone",
	"mutant/free-slot-on-cancel":         "cancel frees the slot at once instead of after settlement",
	"mutant/retry-ignores-settled":       "retry does not check for an in-memory job or marker",
	"mutant/publish-ignores-context":     "publication skips the captured-context check",
	"mutant/no-stale-precedence":         "settlement checks D's stop reason before the context",
	"mutant/keep-slot-on-store-refuse":   "a refused admission transaction keeps its slot reservation",
	"mutant/feedback-unscoped":           "feedbackEvents reads every plan's events, not the identity's",
	"mutant/choice-no-supersede":         "a changed choice does not supersede the earlier event",
	"mutant/prep-not-awaited":            "a stop before launch writes the terminal state without awaiting preparation",
	"mutant/prep-files-kept":             "a failed or stopped preparation leaves its host-side files",
	"mutant/assignment-no-generation":    "reassigning work does not increase the context generation",
	"mutant/launch-skips-context":        "the launch check does not check the captured context",
	"mutant/launch-skips-first-reason":   "the launch check does not check for a first reason, nor for a stop that already ended the job",
	"mutant/lose-memory-reason":          "the terminal write uses only the durable first reason",
	"mutant/budget-not-enforced":         "the task budget timer is not armed",
	"mutant/launch-skips-deadline":       "the launch check does not check the attempt deadline",
	"mutant/time-limit-beats-cancel":     "the time limit moves the task to needs human even when cancel task is pending",
	"mutant/reject-closes-task":          "reject with feedback closes the task",
	"mutant/admit-closed-task":           "admission does not check the task status",
	"mutant/publish-ignores-cancel":      "publication does not check cancel_requested",
	"mutant/second-reason-writes":        "a second stop overwrites the first reason",
	"mutant/mark-running-ignores-reason": "pending → running ignores a recorded first reason",
	"mutant/remove-before-export":        "task storage is removed before the export and terminal write",
	"mutant/remove-before-commit":        "a completed writable attempt's storage is removed before its commit is taken",

	"mutant/export-no-deadline":            "the partial-output export has no 60-second deadline",
	"mutant/shutdown-beats-d-reason":       "first reason shutdown wins over D's own timeout, output-limit or capture-failure",
	"mutant/recovery-ignores-first-reason": "startup recovery finalizes rows as if no first reason was saved",
	"mutant/requeue-not-exclusive":         "requeue_pending neither refuses retry and other admissions nor needs the compare-and-swap claim",
	"mutant/lock-not-exclusive":            "the single-runner lock opens its lock database without taking the exclusive OS lock",
	"mutant/ledger-outside-publish":        "the ledger entry is written outside the publication transaction",
	"mutant/retention-delete-first":        "retention deletes a referenced file before clearing its row",
	"mutant/human-gate-during-attempt":     "the task may move to a human-gated status while an attempt is active",
	"mutant/late-publish-accepted":         "publication does not check that the attempt is the task's current attempt",
	"mutant/stop-before-commit":            "a stop inside a user action applies before the commit",
	"mutant/cancel-task-not-closed":        "the attempt's terminal write does not close a task whose cancel task is pending",
	"mutant/completion-ignores-status":     "publication does not check that the task is running (the completion guard is off)",
	"mutant/prelaunch-storage-first":       "a stop before the D start call removes task storage before the terminal write",
	"mutant/event-key-unscoped":            "an event is dropped when another plan already has one of its kind and action ID (the key lacks the plan key)",
	"mutant/recovery-storage-unbound":      "startup recovery uses a task-storage handle whose attempt and allocation labels match no row, or disagree with it",
	"mutant/allocation-id-unsaved":         "admission does not save the task-storage allocation ID on the row before allocation starts",
	"mutant/recovery-remove-first":         "startup recovery removes a matched handle's task storage before its export and the finalization transaction",
	"mutant/recovery-exports-read-only":    "startup recovery exports the partial output of read-only attempts too",
	"mutant/diagnostic-no-overwrite":       "a saved diagnostic whose <attemptId>.diff already exists gets a new file name instead of overwriting it",
	"mutant/recovery-cleanup-on-failure":   "after the finalization transaction fails, startup recovery still removes the recovered task storage (step 4) before it stops",
	"mutant/recovery-ignores-d-failure":    "startup recovery goes on as if D's recoverLeftovers had found nothing when it rejects",
	"mutant/legacy-ignored":                "startup recovery ignores objects with codeboost labels but no runner label, so admission opens",
	"mutant/d-recovery-unscoped":           "the simulated D's recoverLeftovers acts on every runner's containers and task storage, not only the given owner's",
	"mutant/recovery-removes-unknown":      "startup recovery removes every entry under the attempts directory, known attempt or not",
	"mutant/group-not-stopped":             "startup recovery's step 2b does not stop saved preparation groups that are still alive",
	"mutant/release-skips-process-check":   "--release-preparation removes the attempt directory without checking for processes using it",
	"mutant/unowned-preparation-ignored":   "startup recovery ignores attempts marked \"preparation starting\" with no saved group ID (step 7)",
	"mutant/recovery-trusts-attempt-id":    "startup recovery uses a stored attempt ID that is not a lowercase UUID v4 like any other",
	"mutant/start-failure-frees-slot":      "a failed pending → running write ends the row at settlement and frees the slot instead of keeping a marker",

	// Mutants guarding startup recovery, shutdown and markers (issue 3).
	"mutant/recovery-ignores-context":         "startup recovery does not check the captured context of a row with no first reason",
	"mutant/recovery-no-stale-precedence":     "startup recovery checks the budget and attempt deadlines before the captured context",
	"mutant/recovery-ignores-budget":          "startup recovery skips the task-budget fallback (no time-limit mapping for a row with no first reason)",
	"mutant/recovery-shutdown-beats-d-reason": "startup recovery maps first reason shutdown to cancelled even when the row has a saved D stop_reason of timeout, output-limit or capture-failure",
	"mutant/requeue-twice":                    "startup recovery lists a task for requeue again although its requeue_pending is already set",
	"mutant/requeue-closed-task":              "startup recovery's requeue list does not skip closed or human-gated tasks",
	"mutant/recovery-opens-before-removal":    "startup recovery opens admission before every recovered task storage is removed",
	"mutant/marker-frees-slot":                "an unresolved marker frees its slot instead of holding it until restart",
	"mutant/time-limit-no-human-gate":         "the time-limit terminal write does not move the task to needs human",

	// Mutants guarding merge attempts, reconciliation and the rebase marker (issue 3, item 9).
	"mutant/merge-outcome-without-close":  "a confirmed merged outcome records the merge attempt merged but leaves the task's status and task-closed event to reconciliation",
	"mutant/no-merge-reconciliation":      "startup recovery skips step 5: a confirmed merged task missing its status or task-closed event stays so",
	"mutant/reconcile-fresh-key":          "the merged task-closed event is keyed by a fresh ID, not the merge attempt's, and reconciliation repeats for every merged task",
	"mutant/cancel-during-merge":          "cancel task is not refused while a merge attempt is submitting or queued",
	"mutant/rebase-not-aborted":           "startup recovery's step 4 does not abort recorded rebases: tasks.rebase_in_progress stays set",
	"mutant/requeue-during-rebase":        "startup recovery's requeue list does not skip a task whose rebase marker is still set",
	"mutant/migrate-merged-without-event": "the v5 → v6 migration backfills a merged task's status without its task-closed event",
	"mutant/rebase-abort-no-cas":          "aborting a rebase clears tasks.rebase_in_progress whatever attempt it names (no compare-and-swap on attemptId)",

	// Mutants guarding the single-runner lock and the owner token (issue 3, real processes).
	"mutant/lock-by-path":              "the single-runner lock file is named from the database path as given, not the file's device and inode",
	"mutant/allow-hard-links":          "the single-runner lock's step 1 accepts a database file with more than one hard link",
	"mutant/skip-parent-check":         "the single-runner lock skips step 0's owner and mode check of the database's parent directory",
	"mutant/follow-symlinks":           "the single-runner lock's step 1 opens and creates the database without O_NOFOLLOW",
	"mutant/release-deletes-lock-file": "releasing the single-runner lock deletes its lock file",
	"mutant/owner-token-unchecked":     "the Store uses a stored runner owner token that is not 32 lowercase hexadecimal characters",
	"mutant/copy-keeps-token":          "the Store keeps the stored runner owner token although the database file's device and inode differ (a copy)",

	"mutant/keep-mark-without-spawn": "a preparation step that failed before spawning anything leaves its \"preparation starting\" mark, so the next start fails closed (step 7) over a process that never existed",

	"mutant/stop-groups-of-ended-attempts": "startup recovery's step 2b also tries to stop the saved preparation groups of attempts that have ended",

	"mutant/recovery-silent-on-missing-storage": "startup recovery finalizes a writable row whose saved storage D did not hand back without saying its partial output was lost",

	"mutant/recovery-ignores-stop-hint": "startup recovery records failed \"Interrupted\" without \"a stop may have been requested\" although a first-reason write failed before the crash",

	// Mutants guarding plan runs (issue 3, item 8: "Start and resume").
	"mutant/plan-run-skips-approvals":        "start, resume and the item executor do not require an approval for every item at the current revision",
	"mutant/plan-run-ignores-review-version": "the item executor admits the next item although the review version changed while the earlier item ran",
	"mutant/plan-run-not-exclusive":          "start and resume are not refused while an earlier plan run is still finishing",
	"mutant/resume-ignores-completed":        "resume and the item executor do not skip items that already have a completed execute attempt at the current revision",
	"mutant/drained-ignores-plan-runs":       "shutdown counts as drained when no job is left, without awaiting plan runs (step 5a)",
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

var deterministic = regexp.MustCompile(`^(\d+\*)?return(\(.*\))?$|^off$`)

// Enable turns a catalogued failpoint on with deterministic terms.
func (s *Set) Enable(name, terms string) error {
	if _, ok := Catalog[name]; !ok {
		return fmt.Errorf("unknown failpoint %q (see failpoints.Catalog)", name)
	}
	if !deterministic.MatchString(terms) {
		return fmt.Errorf("failpoint %s: terms %q are not replayable; use return, N*return or off", name, terms)
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
	if err != nil {
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

// Mutants lists the catalogued mutant names, sorted.
func Mutants() []string {
	var out []string
	for k := range Catalog {
		if strings.HasPrefix(k, "mutant/") {
			out = append(out, k)
		}
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
