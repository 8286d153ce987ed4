package store_test

// "Where the current context lives": every Store method that changes the
// plan revision, the snapshot, the assignment or the referenced code
// increases tasks.context_generation (and the state version) in the same
// transaction, and nothing else moves it. The classification below is the
// regression list the contract asks for: a new exported method of Store, Tx
// or Capability fails TestEveryMethodIsClassified until someone decides
// which kind it is, and a method classified as changing the context fails
// TestContextChangingMethods until it has a real call there.

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

type contextEffect int

const (
	doesNotChangeContext contextEffect = iota + 1
	changesContext
)

// contextEffects classifies every exported method. Readers and conduits
// (Update, View, UserAction run the caller's function; their own effect is
// none) do not change the context.
var contextEffects = map[string]contextEffect{
	// *store.Store
	"Store.Admit":              doesNotChangeContext,
	"Store.Attempt":            doesNotChangeContext,
	"Store.ChangeToken":        doesNotChangeContext,
	"Store.Attempts":           doesNotChangeContext,
	"Store.Close":              doesNotChangeContext,
	"Store.CloseWriteGate":     doesNotChangeContext,
	"Store.FeedbackEvents":     doesNotChangeContext,
	"Store.PresentContext":     doesNotChangeContext,
	"Store.ShutdownCapability": doesNotChangeContext,
	"Store.Task":               doesNotChangeContext,
	"Store.Update":             doesNotChangeContext,
	"Store.UserAction":         doesNotChangeContext,
	"Store.View":               doesNotChangeContext,

	// store.Capability
	"Capability.Update": doesNotChangeContext,

	// *store.Tx: what an attempt depends on.
	"Tx.ImportRevision":     changesContext, // plan revision
	"Tx.ApplySuggestion":    changesContext, // plan revision
	"Tx.ImportPlan":         changesContext, // plan revision
	"Tx.ChangeSnapshot":     changesContext, // snapshot
	"Tx.Reassign":           changesContext, // assignment
	"Tx.RecordHistory":      changesContext, // referenced code
	"Tx.Publish":            changesContext, // referenced code, when it carries a commit (without one: TestAttemptTransitionsKeepGeneration)
	"Tx.RejectWithFeedback": changesContext, // plan revision
	"Tx.ConsumePlanRequest": changesContext, // plan revision, through ImportPlan

	// *store.Tx: attempt lifecycle and task bookkeeping.
	"Tx.Admit":                    doesNotChangeContext,
	"Tx.AfterCommit":              doesNotChangeContext,
	"Tx.CancelTask":               doesNotChangeContext,
	"Tx.CheckRetry":               doesNotChangeContext,
	"Tx.CheckRunAgain":            doesNotChangeContext,
	"Tx.CheckCancelTask":          doesNotChangeContext,
	"Tx.CheckMerge":               doesNotChangeContext,
	"Tx.CheckApproveContinuation": doesNotChangeContext,
	"Tx.CheckGuidance":            doesNotChangeContext,
	"Tx.ClearDiagnosticRef":       doesNotChangeContext,
	"Tx.CreateTask":               doesNotChangeContext,
	"Tx.EnsureTask":               doesNotChangeContext,
	"Tx.ApprovedItems":            doesNotChangeContext,
	"Tx.StaleApprovals":           doesNotChangeContext,
	"Tx.Finish":                   doesNotChangeContext,
	"Tx.ResumePlan":               doesNotChangeContext,
	"Tx.StartPlan":                doesNotChangeContext,
	"Tx.CanStart":                 doesNotChangeContext,
	"Tx.CanResume":                doesNotChangeContext,
	"Tx.NextPlanItem":             doesNotChangeContext,
	"Tx.Approve":                  doesNotChangeContext,
	"Tx.ApproveReviewed":          doesNotChangeContext,
	"Tx.PauseForAmendment":        doesNotChangeContext, // a status and a checkpoint; its commit went through Publish
	"Tx.ApproveContinuation":      doesNotChangeContext,
	"Tx.LatestCheckpoint":         doesNotChangeContext,
	"Tx.Progress":                 doesNotChangeContext,
	"Store.AdmissionRefused":      doesNotChangeContext,
	"Tx.PreparationGroups":        doesNotChangeContext,
	"Tx.RequeueCandidates":        doesNotChangeContext,
	"Tx.RequeueClaims":            doesNotChangeContext,
	"Tx.FinishPlanRun":            doesNotChangeContext,
	"Tx.FinishRead":               doesNotChangeContext,
	"Tx.MarkPreparationStarting":  doesNotChangeContext,
	"Tx.MarkRunning":              doesNotChangeContext,
	"Tx.RecordFirstReason":        doesNotChangeContext,
	"Tx.RecordSafetyFinding":      doesNotChangeContext,
	"Tx.OweFinding":               doesNotChangeContext,
	"Tx.RunnerOwnerToken":         doesNotChangeContext,
	"Tx.ActiveAttempts":           doesNotChangeContext,
	"Tx.AllAttempts":              doesNotChangeContext,
	"Tx.StartingPreparations":     doesNotChangeContext,
	"Tx.ClaimRequeue":             doesNotChangeContext,
	"Tx.ClearPreparationStarting": doesNotChangeContext,
	"Tx.Now":                      doesNotChangeContext,
	"Tx.SetAllocation":            doesNotChangeContext,
	"Tx.SetPreparationGroup":      doesNotChangeContext,
	"Tx.SetStorageBaseline":       doesNotChangeContext,
	"Tx.SetTaskStatus":            doesNotChangeContext,

	// *store.Tx: merge attempts and the rebase marker (issue 3, item 9).
	"Tx.BeginMergeAttempt":   doesNotChangeContext,
	"Tx.SetMergeState":       doesNotChangeContext,
	"Tx.FinishMergeMerged":   doesNotChangeContext,
	"Tx.AdmitMerge":          doesNotChangeContext,
	"Tx.EndMerge":            doesNotChangeContext,
	"Tx.LatestMerge":         doesNotChangeContext,
	"Tx.ActiveMerges":        doesNotChangeContext,
	"Store.SavedAction":      doesNotChangeContext,
	"Tx.ReconcileMerged":     doesNotChangeContext,
	"Tx.MergeAttempt":        doesNotChangeContext,
	"Tx.SetRebaseInProgress": doesNotChangeContext, // the marker only; a rebase's new head goes through RecordHistory
	"Tx.AbortRebase":         doesNotChangeContext,
	"Tx.RebasesInProgress":   doesNotChangeContext,

	// *store.Tx: review actions that leave the plan revision alone.
	"Tx.ChangeNote":         doesNotChangeContext,
	"Tx.AssignSegment":      doesNotChangeContext, // a review choice, not tasks.assignment_id
	"Tx.AcceptSegment":      doesNotChangeContext,
	"Tx.AcceptFinding":      doesNotChangeContext,
	"Tx.NeedsHumanGuidance": doesNotChangeContext,
	"Tx.AddFinding":         doesNotChangeContext,

	// *store.Tx: questions (questions.go). A question's note moves the
	// state version; the question's own lifecycle is not the task's.
	"Tx.AskQuestion":           doesNotChangeContext,
	"Tx.StartQuestion":         doesNotChangeContext,
	"Tx.FinishAnswer":          doesNotChangeContext,
	"Tx.FailQuestion":          doesNotChangeContext,
	"Tx.FailLeftoverQuestions": doesNotChangeContext,
	"Tx.Question":              doesNotChangeContext,
	"Tx.Questions":             doesNotChangeContext,
	"Tx.AskOwnerToken":         doesNotChangeContext,
	"Tx.PlanningOwnerToken":    doesNotChangeContext,

	// *store.Tx: planning requests (requests.go). A request is the plan's,
	// not the task's: none of these moves the state version either.
	"Tx.BeginPlanRequest":         doesNotChangeContext,
	"Tx.CompletePlanRequest":      doesNotChangeContext,
	"Tx.SettlePlanRequest":        doesNotChangeContext,
	"Tx.CancelPlanRequest":        doesNotChangeContext,
	"Tx.FailLeftoverPlanRequests": doesNotChangeContext,
	"Tx.PlanRequest":              doesNotChangeContext,
	"Tx.PlanRequests":             doesNotChangeContext,

	// *store.Tx: readers.
	"Tx.Attempt":         doesNotChangeContext,
	"Tx.Attempts":        doesNotChangeContext,
	"Tx.Choices":         doesNotChangeContext,
	"Tx.DiagnosticRefs":  doesNotChangeContext,
	"Tx.EventCount":      doesNotChangeContext,
	"Tx.Findings":        doesNotChangeContext,
	"Tx.History":         doesNotChangeContext,
	"Tx.Notes":           doesNotChangeContext,
	"Tx.Plan":            doesNotChangeContext,
	"Tx.PlanItems":       doesNotChangeContext,
	"Tx.ItemOf":          doesNotChangeContext,
	"Tx.PresentContext":  doesNotChangeContext,
	"Tx.TaskAndPresent":  doesNotChangeContext,
	"Tx.Task":            doesNotChangeContext,
	"Tx.UserActionCount": doesNotChangeContext,
}

func exportedMethods() []string {
	seen := map[string]bool{}
	var out []string
	for _, typ := range []reflect.Type{
		reflect.TypeFor[*store.Store](),
		reflect.TypeFor[*store.Tx](),
		reflect.TypeFor[store.Capability](),
		reflect.TypeFor[*store.Capability](),
	} {
		name := strings.TrimPrefix(typ.String(), "*store.")
		name = strings.TrimPrefix(name, "store.")
		for i := 0; i < typ.NumMethod(); i++ {
			m := name + "." + typ.Method(i).Name
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestEveryMethodIsClassified fails when an exported method of Store, Tx or
// Capability is missing from contextEffects, or when the map names a
// method that no longer exists.
func TestEveryMethodIsClassified(t *testing.T) {
	found := map[string]bool{}
	for _, m := range exportedMethods() {
		found[m] = true
		if _, ok := contextEffects[m]; !ok {
			t.Errorf("%s is not classified: add it to contextEffects in store/context_test.go as changesContext "+
				"(it changes the plan revision, snapshot, assignment or referenced code, so it must increase the "+
				"context generation) or doesNotChangeContext", m)
		}
	}
	var stale []string
	for m := range contextEffects {
		if !found[m] {
			stale = append(stale, m)
		}
	}
	sort.Strings(stale)
	for _, m := range stale {
		t.Errorf("contextEffects names %s, which is not an exported method any more", m)
	}
}

// contextCase is one real call and what it may do to the context.
type contextCase struct {
	name   string // descriptive
	method string // its contextEffects key
	// setup prepares a task and returns it with the call to make.
	setup func(e *env) (key string, call func(tx *store.Tx) error)
	noop  bool // the call changes nothing at all (the state version stays too)
}

var actionIDs = ids.NewSeeded(42)

func contextCases() []contextCase {
	queued := func(e *env) string { return e.newTask("") }
	pending := func(e *env) (string, store.Attempt) { k := queued(e); return k, e.admit(k, words.KindExecute) }
	running := func(e *env) (string, store.Attempt) { k := queued(e); return k, e.running(k, words.KindExecute) }
	return []contextCase{
		// Changes.
		{name: "import revision", method: "Tx.ImportRevision", setup: func(e *env) (string, func(*store.Tx) error) {
			k, _ := pending(e)
			return k, func(tx *store.Tx) error { _, err := tx.ImportRevision(k, 1, []string{"a", "b", "c"}); return err }
		}},
		{name: "import plan", method: "Tx.ImportPlan", setup: func(e *env) (string, func(*store.Tx) error) {
			k, _ := running(e)
			items := planItems(e.t, "a", "b")
			return k, func(tx *store.Tx) error { _, err := tx.ImportPlan(k, 1, items); return err }
		}},
		{name: "apply suggestion", method: "Tx.ApplySuggestion", setup: func(e *env) (string, func(*store.Tx) error) {
			k, _ := running(e)
			return k, func(tx *store.Tx) error { _, err := tx.ApplySuggestion(k, 1, []string{"a"}); return err }
		}},
		{name: "change snapshot", method: "Tx.ChangeSnapshot", setup: func(e *env) (string, func(*store.Tx) error) {
			k, _ := running(e)
			return k, func(tx *store.Tx) error { return tx.ChangeSnapshot(k, "snap-2") }
		}},
		{name: "reassign", method: "Tx.Reassign", setup: func(e *env) (string, func(*store.Tx) error) {
			k, _ := pending(e)
			return k, func(tx *store.Tx) error { return tx.Reassign(k, "bob") }
		}},
		{name: "record history", method: "Tx.RecordHistory", setup: func(e *env) (string, func(*store.Tx) error) {
			k, _ := running(e)
			return k, func(tx *store.Tx) error { return tx.RecordHistory(k, "", "c0ffee") }
		}},
		{name: "publish with a commit", method: "Tx.Publish", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := running(e)
			return k, func(tx *store.Tx) error { _, err := tx.Publish(a.ID, []byte(`{}`), "c0ffee", 0); return err }
		}},
		{name: "reject with feedback", method: "Tx.RejectWithFeedback", setup: func(e *env) (string, func(*store.Tx) error) {
			k := e.newTask(words.StatusInReview)
			item := 1
			return k, func(tx *store.Tx) error {
				_, err := tx.RejectWithFeedback(k, actionIDs.UUID(), 1, []store.NoteInput{{Item: &item, Text: "redo this"}})
				return err
			}
		}},

		{name: "consume a planning request", method: "Tx.ConsumePlanRequest", setup: func(e *env) (string, func(*store.Tx) error) {
			k, _ := running(e)
			id := actionIDs.UUID()
			e.update(func(tx *store.Tx) error {
				if _, err := tx.BeginPlanRequest(k, store.ModeSuggestion, id, 1, "snap-1"); err != nil {
					return err
				}
				return tx.CompletePlanRequest(id, 1, "snap-1", []byte(`[{"item":0,"title":"three","instructions":"","kind":"add"}]`))
			})
			return k, func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(id, 1); return err }
		}},

		// Does not change.
		{name: "create task", method: "Tx.CreateTask", setup: func(e *env) (string, func(*store.Tx) error) {
			id := store.Identity{RepositoryID: "repo", TaskID: "fresh", PlanID: "plan"}
			return id.Key(), func(tx *store.Tx) error {
				return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s", Items: []string{"x"}})
			}
		}},
		{name: "admit", method: "Tx.Admit", setup: func(e *env) (string, func(*store.Tx) error) {
			k := queued(e)
			r := e.admitReq(k, words.KindReview)
			return k, func(tx *store.Tx) error { _, err := tx.Admit(r); return err }
		}},
		{name: "record first reason", method: "Tx.RecordFirstReason", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := running(e)
			return k, func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, words.ReasonStale, "snapshot moved") }
		}},
		{name: "mark running", method: "Tx.MarkRunning", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := pending(e)
			return k, func(tx *store.Tx) error { return tx.MarkRunning(a.ID) }
		}},
		{name: "finish", method: "Tx.Finish", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := running(e)
			return k, func(tx *store.Tx) error {
				return tx.Finish(a.ID, store.Terminal{State: words.Failed, Diagnostic: "exit 1"})
			}
		}},
		{name: "finish with time limit", method: "Tx.Finish", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := running(e)
			e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, words.ReasonTimeLimit, "") })
			return k, func(tx *store.Tx) error { return tx.Finish(a.ID, store.Terminal{State: words.Cancelled}) }
		}},
		{name: "set allocation", method: "Tx.SetAllocation", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := pending(e)
			return k, func(tx *store.Tx) error { return tx.SetAllocation(a.ID, actionIDs.UUID()) }
		}},
		{name: "set storage baseline", method: "Tx.SetStorageBaseline", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := pending(e)
			return k, func(tx *store.Tx) error { return tx.SetStorageBaseline(a.ID, "baseline", "base") }
		}},
		{name: "record safety finding", method: "Tx.RecordSafetyFinding", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := running(e)
			return k, func(tx *store.Tx) error { return tx.RecordSafetyFinding(a.ID, "agent committed") }
		}},
		{name: "owe finding", method: "Tx.OweFinding", setup: func(e *env) (string, func(*store.Tx) error) {
			k := queued(e)
			return k, func(tx *store.Tx) error { return tx.OweFinding(k, actionIDs.UUID(), "agent committed") }
		}},
		{name: "preparation starting", method: "Tx.MarkPreparationStarting", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := pending(e)
			return k, func(tx *store.Tx) error { return tx.MarkPreparationStarting(a.ID, e.clock.Now()) }
		}},
		{name: "preparation group", method: "Tx.SetPreparationGroup", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := pending(e)
			return k, func(tx *store.Tx) error { return tx.SetPreparationGroup(a.ID, 4242, e.clock.Now(), "boot:ticks") }
		}},
		{name: "set task status", method: "Tx.SetTaskStatus", setup: func(e *env) (string, func(*store.Tx) error) {
			k := queued(e)
			return k, func(tx *store.Tx) error { return tx.SetTaskStatus(k, words.StatusNeedsAmendment) }
		}},
		{name: "cancel task while running", method: "Tx.CancelTask", setup: func(e *env) (string, func(*store.Tx) error) {
			k, _ := running(e)
			return k, func(tx *store.Tx) error { _, _, err := tx.CancelTask(k, actionIDs.UUID(), true); return err }
		}},
		{name: "cancel idle task", method: "Tx.CancelTask", setup: func(e *env) (string, func(*store.Tx) error) {
			k := queued(e)
			return k, func(tx *store.Tx) error { _, _, err := tx.CancelTask(k, actionIDs.UUID(), true); return err }
		}},
		{name: "clear diagnostic ref", method: "Tx.ClearDiagnosticRef", setup: func(e *env) (string, func(*store.Tx) error) {
			k, a := running(e)
			if err := e.finish(a.ID, store.Terminal{State: words.Failed, DiagnosticRef: a.ID + ".diff"}); err != nil {
				e.t.Fatal(err)
			}
			return k, func(tx *store.Tx) error { return tx.ClearDiagnosticRef(a.ID) }
		}},
		{name: "change note", method: "Tx.ChangeNote", setup: func(e *env) (string, func(*store.Tx) error) {
			k := e.newTask(words.StatusInReview)
			return k, func(tx *store.Tx) error { _, err := tx.ChangeNote(k, actionIDs.UUID(), 1, "rename it"); return err }
		}},
		{name: "assign segment", method: "Tx.AssignSegment", setup: func(e *env) (string, func(*store.Tx) error) {
			k := e.newTask(words.StatusInReview)
			return k, func(tx *store.Tx) error { return tx.AssignSegment(k, actionIDs.UUID(), "seg-1", 2) }
		}},
		{name: "accept segment", method: "Tx.AcceptSegment", setup: func(e *env) (string, func(*store.Tx) error) {
			k := e.newTask(words.StatusInReview)
			return k, func(tx *store.Tx) error { return tx.AcceptSegment(k, actionIDs.UUID(), "seg-1") }
		}},
		{name: "add finding", method: "Tx.AddFinding", setup: func(e *env) (string, func(*store.Tx) error) {
			k := e.newTask(words.StatusInReview)
			return k, func(tx *store.Tx) error { return tx.AddFinding(k, "f-1", "missing test") }
		}},
		{name: "accept finding", method: "Tx.AcceptFinding", setup: func(e *env) (string, func(*store.Tx) error) {
			k := e.newTask(words.StatusInReview)
			e.update(func(tx *store.Tx) error { return tx.AddFinding(k, "f-1", "missing test") })
			return k, func(tx *store.Tx) error { return tx.AcceptFinding(k, actionIDs.UUID(), "f-1") }
		}},
		{name: "needs-human guidance", method: "Tx.NeedsHumanGuidance", setup: func(e *env) (string, func(*store.Tx) error) {
			k := e.newTask(words.StatusNeedsHuman)
			return k, func(tx *store.Tx) error {
				_, err := tx.NeedsHumanGuidance(k, actionIDs.UUID(), "try smaller steps")
				return err
			}
		}},
		{name: "same snapshot again", method: "Tx.ChangeSnapshot", noop: true, setup: func(e *env) (string, func(*store.Tx) error) {
			k, _ := running(e)
			return k, func(tx *store.Tx) error { return tx.ChangeSnapshot(k, "snap-1") }
		}},
		{name: "same assignment again", method: "Tx.Reassign", noop: true, setup: func(e *env) (string, func(*store.Tx) error) {
			k, _ := running(e)
			return k, func(tx *store.Tx) error { return tx.Reassign(k, "unassigned") }
		}},
	}
}

// contextFields is the present context without the generation.
func contextFields(c store.Context) store.Context { c.Generation = 0; return c }

func TestContextChangingMethods(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range contextCases() {
		effect, ok := contextEffects[c.method]
		if !ok {
			t.Errorf("case %q calls %s, which contextEffects does not classify", c.name, c.method)
			continue
		}
		covered[c.method] = true
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key, call := c.setup(e)
			var beforeCtx store.Context
			var beforeTask store.Task
			existed := true
			if err := e.s.View(func(tx *store.Tx) error {
				var err error
				if beforeTask, err = tx.Task(key); err != nil {
					return err
				}
				beforeCtx, err = tx.PresentContext(key)
				return err
			}); err != nil {
				if store.RefusalCode(err) != store.CodeNotFound {
					t.Fatal(err)
				}
				existed = false
			}
			e.update(call)
			afterTask := e.task(key)
			afterCtx, err := e.s.PresentContext(key)
			if err != nil {
				t.Fatal(err)
			}
			if !existed {
				if afterTask.ContextGeneration != 0 || afterTask.StateVersion != 0 {
					t.Errorf("new task starts at generation %d, state version %d; want 0, 0", afterTask.ContextGeneration, afterTask.StateVersion)
				}
				return
			}
			gen := afterTask.ContextGeneration - beforeTask.ContextGeneration
			fieldsMoved := contextFields(beforeCtx) != contextFields(afterCtx)
			switch {
			case c.noop:
				if gen != 0 || afterTask.StateVersion != beforeTask.StateVersion || fieldsMoved {
					t.Errorf("a call that changes nothing moved generation by %d, state version %d → %d, context %+v → %+v",
						gen, beforeTask.StateVersion, afterTask.StateVersion, beforeCtx, afterCtx)
				}
			case effect == changesContext:
				if gen != 1 {
					t.Errorf("%s moved the context generation by %d, want exactly 1", c.method, gen)
				}
				if afterTask.StateVersion <= beforeTask.StateVersion {
					t.Errorf("%s moved the generation but not the state version (%d → %d)", c.method, beforeTask.StateVersion, afterTask.StateVersion)
				}
				if store.StaleCause(beforeCtx, afterCtx) == "" {
					t.Errorf("%s: an attempt that captured the old context is still current", c.method)
				}
			default:
				if gen != 0 {
					t.Errorf("%s moved the context generation by %d, want 0", c.method, gen)
				}
				if fieldsMoved {
					t.Errorf("%s changed a context field without increasing the generation: %+v → %+v", c.method, beforeCtx, afterCtx)
				}
				if afterTask.StateVersion <= beforeTask.StateVersion {
					t.Errorf("%s is a durable change but left the state version at %d", c.method, afterTask.StateVersion)
				}
				if store.StaleCause(beforeCtx, afterCtx) != "" {
					t.Errorf("%s made the captured context non-current: %s", c.method, store.StaleCause(beforeCtx, afterCtx))
				}
			}
		})
	}
	var missing []string
	for m, eff := range contextEffects {
		if eff == changesContext && !covered[m] {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s is classified as changing the context but has no real call in contextCases", m)
	}
}

// TestAttemptTransitionsKeepGeneration is R012: admit → pending → running →
// a valid result publishes completed; the state version rises each time and
// the context generation never moves, so the attempt stays current.
func TestAttemptTransitionsKeepGeneration(t *testing.T) {
	for _, kind := range []string{words.KindReview, words.KindExecute} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			start := e.task(key)
			var a store.Attempt
			steps := []struct {
				name string
				do   func()
			}{
				{"admit", func() { a = e.admit(key, kind) }},
				{"start time", func() {
					e.update(func(tx *store.Tx) error { return tx.MarkPreparationStarting(a.ID, e.clock.Now()) })
				}},
				{"mark running", func() { e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) }) }},
				{"publish", func() {
					e.clock.Advance(time.Minute)
					state, err := e.publish(a.ID, []byte(`{"answer":42}`), "")
					if err != nil || state != words.Completed {
						t.Fatalf("Publish: %q, %v; want completed", state, err)
					}
				}},
			}
			prev := start
			for _, s := range steps {
				s.do()
				now := e.task(key)
				if now.StateVersion != prev.StateVersion+1 {
					t.Errorf("%s: state version %d → %d, want +1", s.name, prev.StateVersion, now.StateVersion)
				}
				if now.ContextGeneration != start.ContextGeneration {
					t.Errorf("%s: context generation %d → %d; an attempt's own transitions never move it", s.name, start.ContextGeneration, now.ContextGeneration)
				}
				present, err := e.s.PresentContext(key)
				if err != nil {
					t.Fatal(err)
				}
				if cause := store.StaleCause(e.attempt(a.ID).Context, present); cause != "" {
					t.Errorf("%s: the attempt's own transition made it non-current: %s", s.name, cause)
				}
				prev = now
			}
			if got := e.attempt(a.ID).State; got != words.Completed {
				t.Errorf("state %s, want completed", got)
			}
		})
	}
}
