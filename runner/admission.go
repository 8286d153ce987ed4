package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// job is the in-memory job of one active attempt: its holder (phase, first
// reason), its preparation, its handle and its storage. It is removed only
// after D settled (or preparation ended), the terminal write succeeded, and
// every resource was released; otherwise the holder keeps it as a marker.
type job struct {
	attemptID string
	planKey   string
	kind      string
	writable  bool

	// h is the attempt's place in the holder order (package holder): its
	// phase, its first reason ("later reasons never replace it"), whether
	// D has it, and the marker it is held under. The holder decides what
	// comes next; the functions of launch.go, settlement.go and stop.go
	// carry out its effects and report back.
	h            holder.Holder
	allocationID string // saved by admission; the storage is allocated under it
	// admitted is the row as admission wrote it. Only what admission fixes
	// for good is read from it (the item and the captured context, which
	// name the plan item); what may change since (state, first reason,
	// the present context) is read again where a guard needs it.
	admitted    store.Attempt
	spec        *itemSpec // the plan item's spec, once read (runner/tree.go)
	staleCause  string    // for first reason stale
	reasonSaved bool      // false while the first-reason write has failed

	// preparation
	prepCancel    context.CancelFunc       // aborts the in-flight preparation step; nil when none
	prepBusy      bool                     // a preparation step is in flight
	groupReported bool                     // the step in flight reported its process group
	source        dadapter.Source          // what storage and the clone are made from
	storage       dadapter.TaskFilesystems // nil until allocation returns (and for good if it failed)
	clone         dadapter.Clone           // the prepared clone, passed to D's start
	tree          dadapter.TaskTree        // checkTaskTree's answer, passed to D's start
	baselineSaved bool                     // the storage's baseline and base are on the row
	deadlineTimer Timer
	budgetTimer   Timer

	handle  dadapter.Handle // nil until D's start returned
	settled *dadapter.Settlement
	// outcome is what the terminal write says, once decided: the failure
	// that ended the preparation or the launch, or rule 2's decision after
	// settlement (decided then), redecided after the export.
	outcome outcome
	decided bool
	commit  string // the commit publication records (a writable attempt that completed)
	finding string // safety finding from the audit
	// scope is publication's scope finding (runner/scope.go): the
	// changed paths the item does not declare, and the leaf entries of
	// the commit that holds them. Empty Paths: nothing out of scope.
	scope store.ScopeFinding
}

// AdmitRequest asks for one new attempt.
type AdmitRequest struct {
	PlanKey              string
	Kind                 string
	Item                 *int
	ExpectedStateVersion int64
}

// Admit admits one attempt: in one event, the in-memory checks and the slot
// reservation, then the Store transaction, releasing the reservation in the
// same event if the transaction refuses or throws. It returns the attempt ID.
func (c *Coordinator) Admit(ctx context.Context, r AdmitRequest) (attemptID string, err error) {
	if callErr := c.call(ctx, func() {
		attemptID, err = c.admit(r, nil)
	}); callErr != nil {
		return "", callErr
	}
	return
}

// reserve is admission's in-memory half. It returns a release func.
func (c *Coordinator) reserve(planKey, kind string) (func(), error) {
	if !c.open {
		return nil, c.closedErr()
	}
	if !slices.Contains(c.cfg.Kinds, kind) {
		msg := fmt.Sprintf("this runner does not run %q attempts", kind)
		if c.cfg.KindsWhy != "" {
			msg += ": " + c.cfg.KindsWhy
		}
		return nil, &store.Refusal{Code: store.CodeKindNotAllowed, Message: msg}
	}
	if c.unreleased {
		return nil, &store.Refusal{Code: store.CodeActiveAttempt, Message: "D could not remove some resources; admission stays closed until restart"}
	}
	if j := c.jobs[planKey]; j != nil {
		return nil, &store.Refusal{Code: store.CodeActiveAttempt, Message: fmt.Sprintf("attempt %s is still held in memory", j.attemptID)}
	}
	if m := c.markers[planKey]; m != nil {
		return nil, &store.Refusal{Code: store.CodeActiveAttempt, Message: "needs restart: " + m.reason}
	}
	if c.slotsUsed >= c.cfg.Slots {
		return nil, &store.Refusal{Code: store.CodeActiveAttempt, Message: "no free runner slot"}
	}
	c.slotsUsed++
	released := false
	return func() {
		if !released {
			released = true
			c.slotsUsed--
		}
	}, nil
}

// admit runs both halves. With tx non-nil the Store half joins the caller's
// transaction (a user action), and the job starts only after it commits.
func (c *Coordinator) admit(r AdmitRequest, tx *store.Tx) (string, error) {
	release, err := c.reserve(r.PlanKey, r.Kind)
	if err != nil {
		c.trace("admit %s %s refused: %v", r.PlanKey, r.Kind, err)
		return "", err
	}
	req := c.admitRequest(store.AdmitRequest{PlanKey: r.PlanKey, Kind: r.Kind, Item: r.Item, ExpectedStateVersion: r.ExpectedStateVersion})
	a, err := c.deps.Store.Admit(req)
	if err != nil {
		release()
		c.trace("admit %s %s refused: %v", r.PlanKey, r.Kind, err)
		return "", err
	}
	c.startJob(a)
	return a.ID, nil
}

// admitRequest completes every admission's request to the Store (a
// direct one, a user action's, a plan run's next item) with the runner's
// attempt timeout and task budget, and a fresh allocation ID: "F generates
// it (a lowercase UUID v4) and saves it as attempts.allocation_id before it
// starts the asynchronous allocation".
func (c *Coordinator) admitRequest(req store.AdmitRequest) store.AdmitRequest {
	req.AttemptTimeout, req.Budget, req.AllocationID = c.cfg.AttemptTimeout, c.cfg.Budget, c.deps.IDs.UUID()
	return req
}

// startJob creates the job for an admitted attempt and starts preparation.
func (c *Coordinator) startJob(a store.Admitted) {
	j := &job{attemptID: a.ID, planKey: a.PlanKey, kind: a.Kind, writable: words.Writable(a.Kind), reasonSaved: true,
		allocationID: a.AllocationID, source: dadapter.Source{Commit: a.Context.ReferencedCodeHash}, admitted: a.Attempt}
	if c.deps.Repository != nil {
		j.source.Repository = c.deps.Repository(a.PlanKey)
	}
	c.jobs[a.PlanKey] = j
	c.traceAttempt(a.ID, "admitted %s %s %s pending", a.PlanKey, a.Kind, a.ID)
	c.armTimers(j, a)
	h, effs := holder.New(policyFor(j.kind))
	j.h = h
	c.do(j, effs)
}
