// Package holder is the attempt holder: the one state machine that every
// lane's attempt goes through, from the slot it is admitted into to the
// slot's release. It decides; it does nothing. Step takes the holder and
// one event (what a preparation, D, the Store or a person reported) and
// returns the next holder and the effects the lane's coordinator must now
// carry out (start the agent, cancel it, write the terminal row, remove the
// storage, free the slot …); each effect's outcome comes back as the next
// event. That is etcd raft's shape: no goroutine, no clock, no I/O here,
// so every (phase, event) pair is tested as a table without SQLite or D.
//
// The order it enforces is the contract's holder order ("Task storage"):
// settled → the partial-output export if the attempt did not complete →
// the terminal write → removeTaskFilesystems → the slot is freed; and
// "Slots and concurrency", rule 5: "A slot is freed only after the
// terminal durable write succeeds. If settled has resolved but the write
// fails … the coordinator keeps an unresolved marker … The marker holds
// the slot". What differs between lanes is a Policy, not code.
package holder

import (
	"errors"
	"fmt"

	"github.com/codeboost/codeboost/words"
)

// Phase is the step of the holder order an attempt is in: what it waits
// for. Freed and Held are final.
type Phase uint8

// The phases, in the holder order.
const (
	// Preparing: the slot is held and the preparation (task storage, and a
	// writable lane's clone) is in flight; it waits for Prepared.
	Preparing Phase = iota + 1
	// Launching: preparation ended well; D's start, then the start write,
	// are under way. It waits for Started, then StartSaved.
	Launching
	// Running: D has the invocation; the holder waits for Settled.
	Running
	// Settled: D settled, or never ran, and what comes before the terminal
	// write is done, bar a never-launched attempt's host-file removal. It
	// waits for Wrote (or HostFilesRemoved first).
	Settled
	// Inspecting: a writable lane's audit and publication of the agent's
	// work; it waits for Inspected.
	Inspecting
	// Exporting: a writable attempt that did not complete has its partial
	// output exported; it waits for Exported.
	Exporting
	// Written: the terminal write is saved; the host-side files of a
	// launched attempt are being removed (HostFilesRemoved).
	Written
	// Releasing: the task storage is being removed (StorageRemoved), then a
	// writable attempt's unneeded commit ref is dropped (CommitReleased).
	Releasing
	// Freed: the slot is free. The holder's life has ended.
	Freed
	// Held: an unresolved marker holds the slot until startup recovery
	// (Holder.Marker says why). "The coordinator never removes a marker on
	// its own."
	Held
)

var phaseNames = [...]string{"", "preparing", "launching", "running", "settled", "inspecting", "exporting",
	"written", "releasing", "freed", "held"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) && p != 0 {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", p)
}

// Phases lists every phase in the holder order.
var Phases = []Phase{Preparing, Launching, Running, Settled, Inspecting, Exporting, Written, Releasing, Freed, Held}

// Final reports whether nothing follows p.
func (p Phase) Final() bool { return p == Freed || p == Held }

// Policy is what one lane's attempts differ by.
type Policy struct {
	// Writable attempts have the agent's work audited and published after
	// settlement (Inspecting), their partial output exported when they did
	// not complete (Exporting), and the commit ref of one that did not
	// complete dropped after the storage's removal ("Release").
	Writable bool
	// HostFiles: the lane keeps host-side files (the attempt directory and
	// the clone in it). They are removed after the terminal write once D
	// ran, and before it when D never ran ("the host-side preparation
	// files could not be removed (before the terminal write when D never
	// ran, after it once D settled)").
	HostFiles bool
	// Abandonable: at shutdown, an invocation that has not settled within
	// the grace is given up and its row written as the shutdown's (the
	// suggestion coordinator's "one that has not settled within 20 seconds
	// … is ended by abandoning planning's worker"). No F1 lane may: its
	// slot waits for D's settlement, which D bounds.
	Abandonable bool
}

// Holder is one attempt's place in the holder order. The zero value is
// not a holder: New makes one.
type Holder struct {
	Phase  Phase
	Policy Policy
	// First is the first stop reason: "The first stop wins"; later ones
	// never replace it. "" is none.
	First words.Reason
	// Marker is why a Held holder holds its slot: words.ResultNotSaved,
	// StartNotSaved, PreparationNotRemoved or StorageNotRemoved.
	Marker string
	// PrepTimedOut says the attempt deadline aborted the preparation: no
	// first reason, and the row ends failed ("Timed out while preparing").
	PrepTimedOut bool
	// Launched says D's start returned a handle: from then on a stop is
	// D's to carry out (Cancel), and the deadline is D's to enforce.
	Launched bool
	// StartNotSaved says the pending → running write failed: D is asked to
	// stop (capture-failure), and once it settled an unresolved marker
	// holds the slot, because the row is still pending.
	StartNotSaved bool
	// CancelSent says D was asked to stop: it keeps the first reason it
	// receives, so it is asked once.
	CancelSent bool
	// Completed says the inspection found the attempt completed: nothing
	// to export, and its commit stays.
	Completed bool
}

// New is an admitted attempt's holder: its slot is held and its
// preparation begins (the lane's first effect, Prepare).
func New(p Policy) (Holder, []Effect) {
	return Holder{Phase: Preparing, Policy: p}, []Effect{Prepare{}}
}

// Event is what a lane's coordinator feeds the holder: a report of work it
// carried out, or a stop.
type Event interface{ event() string }

// The events.
type (
	// Prepared: the preparation ended; Err says why it failed.
	Prepared struct{ Err error }
	// Started: D's start returned; Err says why it threw.
	Started struct{ Err error }
	// StartSaved: the pending → running write ended; Err says why it
	// failed.
	StartSaved struct{ Err error }
	// Stop: a stop was asked (a person, shutdown, staleness, the task
	// budget) for Reason.
	Stop struct{ Reason words.Reason }
	// PrepDeadline: the attempt deadline passed. Before D's start it
	// aborts the preparation; after, the deadline is D's.
	PrepDeadline struct{}
	// SettledEv: D settled the invocation.
	SettledEv struct{}
	// Inspected: the audit and publication ended; Completed says the
	// attempt completed. Err says the decision could not be read: the
	// result is not saved, and an unresolved marker holds the slot.
	Inspected struct {
		Completed bool
		Err       error
	}
	// Overruled: the terminal write the holder asked for was not made as
	// decided, and must be made again. A writable attempt's publication
	// was refused by the Store's guards, or a first reason that arrived
	// after the inspection skipped it (publication steps 3 and 4): the
	// attempt did not complete, so its partial output is exported first.
	// A read-only one's decision was overruled the same ways; it writes
	// the new decision.
	Overruled struct{}
	// Exported: the partial-output export ended (a failed export is noted
	// in the terminal row's diagnostic, never a reason to hold the slot).
	Exported struct{}
	// Wrote: the terminal write ended; Err says why it failed.
	// NotCompleted says it saved another state than the completion the
	// inspection found (publication's completion guard ends the row
	// cancelled when the task is no longer running): the commit is not
	// kept.
	Wrote struct {
		Err          error
		NotCompleted bool
	}
	// HostFilesRemoved: the host-side files' removal ended.
	HostFilesRemoved struct{ Err error }
	// StorageRemoved: removeTaskFilesystems ended.
	StorageRemoved struct{ Err error }
	// CommitReleased: the dropped commit ref's removal ended (a failure is
	// garbage in the runner-owned repository, not a hazard, and traced).
	CommitReleased struct{}
	// Abandon: the shutdown grace passed with the invocation unsettled
	// (Policy.Abandonable only); its later settlement is the lane's to
	// ignore.
	Abandon struct{}
)

func (Prepared) event() string         { return "prepared" }
func (Started) event() string          { return "started" }
func (StartSaved) event() string       { return "start-saved" }
func (Stop) event() string             { return "stop" }
func (PrepDeadline) event() string     { return "deadline" }
func (SettledEv) event() string        { return "settled" }
func (Inspected) event() string        { return "inspected" }
func (Exported) event() string         { return "exported" }
func (Overruled) event() string        { return "overruled" }
func (Wrote) event() string            { return "wrote" }
func (HostFilesRemoved) event() string { return "host-files-removed" }
func (StorageRemoved) event() string   { return "storage-removed" }
func (CommitReleased) event() string   { return "commit-released" }
func (Abandon) event() string          { return "abandon" }

// Effect is work the lane's coordinator must carry out, in the order
// given; each reports back as an event.
type Effect interface{ effect() string }

// The effects.
type (
	Prepare          struct{}                          // begin the preparation → Prepared
	AbortPreparation struct{}                          // abort the preparation step in flight → Prepared
	Start            struct{}                          // call D's start → Started
	SaveStart        struct{}                          // the pending → running write → StartSaved
	Cancel           struct{ Reason words.StopReason } // ask D to stop with Reason (→ Settled, in time)
	Audit            struct{}                          // audit and publish the agent's work → Inspected
	Export           struct{}                          // export the partial output → Exported
	WriteTerminal    struct{}                          // the terminal write, with First → Wrote
	RemoveHostFiles  struct{}                          // remove the host-side files → HostFilesRemoved
	RemoveStorage    struct{}                          // removeTaskFilesystems → StorageRemoved
	ReleaseCommit    struct{}                          // drop the attempt's commit ref → CommitReleased
	FreeSlot         struct{}                          // free the slot: the attempt's life has ended
	Mark             struct{ Reason string }           // keep an unresolved marker holding the slot
)

func (Prepare) effect() string          { return "prepare" }
func (AbortPreparation) effect() string { return "abort-preparation" }
func (Start) effect() string            { return "start" }
func (SaveStart) effect() string        { return "save-start" }
func (e Cancel) effect() string         { return "cancel " + string(e.Reason) }
func (Audit) effect() string            { return "audit" }
func (Export) effect() string           { return "export" }
func (WriteTerminal) effect() string    { return "write-terminal" }
func (RemoveHostFiles) effect() string  { return "remove-host-files" }
func (RemoveStorage) effect() string    { return "remove-storage" }
func (ReleaseCommit) effect() string    { return "release-commit" }
func (FreeSlot) effect() string         { return "free-slot" }
func (e Mark) effect() string           { return "mark " + e.Reason }

// EventName and EffectName are the words traces and tests print.
func EventName(e Event) string   { return e.event() }
func EffectName(e Effect) string { return e.effect() }

// ErrUnexpected says an event came in a phase that cannot receive it: a
// report of work the holder never asked for, or anything after the end.
// It is the lane's programming error; the holder is left as it was.
var ErrUnexpected = errors.New("holder: unexpected event")

// StopReasonFor is the reason D is asked to stop with for a first reason:
// shutdown for shutdown, timeout for the task budget, cancelled for the
// rest. D has no stale value: F passes cancelled and keeps the real cause
// itself.
func StopReasonFor(r words.Reason) words.StopReason {
	switch r {
	case words.ReasonShutdown:
		return words.StopShutdown
	case words.ReasonTimeLimit:
		return words.StopTimeout
	}
	return words.StopCancelled
}

// Step is the transition function: h after ev, and what to do now. It
// takes no time: the deadlines that stop an attempt are the lane's timers,
// which arrive here as events (PrepDeadline, a Stop for the time limit),
// so every decision depends on the order of events alone, and the table
// test needs no clock either.
func Step(h Holder, ev Event) (Holder, []Effect, error) {
	if stop, ok := ev.(Stop); ok && !h.Phase.Final() {
		return h.stop(stop.Reason)
	}
	switch h.Phase {
	case Preparing:
		switch ev := ev.(type) {
		case Prepared:
			if ev.Err != nil || h.First != "" || h.PrepTimedOut {
				return h.ended()
			}
			h.Phase = Launching
			return h, []Effect{Start{}}, nil
		case PrepDeadline:
			if h.First != "" || h.PrepTimedOut {
				return h, nil, nil
			}
			h.PrepTimedOut = true
			return h, []Effect{AbortPreparation{}}, nil
		}
	case Launching:
		switch ev := ev.(type) {
		case Started:
			if h.Launched {
				break
			}
			if ev.Err != nil {
				return h.ended()
			}
			h.Launched = true
			return h, []Effect{SaveStart{}}, nil
		case StartSaved:
			if !h.Launched {
				break
			}
			h.Phase = Running
			switch {
			case ev.Err != nil:
				// "Keep the job with its handle, call
				// handle.cancel('capture-failure'), and await settled. Then
				// keep an unresolved marker for the task, because the row is
				// still pending."
				h.StartNotSaved = true
				return h.cancel(words.StopCaptureFailure)
			case h.First != "":
				return h.cancel(StopReasonFor(h.First)) // stopped while D's start was under way
			}
			return h, nil, nil
		case PrepDeadline:
			return h, nil, nil // D enforces the deadline it was given
		}
	case Running:
		switch ev.(type) {
		case Abandon:
			if !h.Policy.Abandonable {
				break
			}
			if h.StartNotSaved {
				return h.hold(words.StartNotSaved) // the row is still pending: only a restart settles it
			}
			h.Phase = Settled
			return h, []Effect{WriteTerminal{}}, nil
		case SettledEv:
			if h.StartNotSaved {
				return h.hold(words.StartNotSaved)
			}
			if h.Policy.Writable {
				h.Phase = Inspecting
				return h, []Effect{Audit{}}, nil
			}
			h.Phase = Settled
			return h, []Effect{WriteTerminal{}}, nil
		case PrepDeadline:
			return h, nil, nil
		}
	case Settled:
		switch ev := ev.(type) {
		case HostFilesRemoved:
			if h.Launched || !h.Policy.HostFiles {
				break
			}
			if ev.Err != nil {
				return h.hold(words.PreparationNotRemoved)
			}
			return h, []Effect{WriteTerminal{}}, nil
		case Wrote:
			if ev.Err != nil {
				return h.hold(words.ResultNotSaved)
			}
			if ev.NotCompleted {
				h.Completed = false
			}
			h.Phase = Written
			if h.Launched && h.Policy.HostFiles {
				return h, []Effect{RemoveHostFiles{}}, nil
			}
			return h.release()
		case Overruled:
			// Only a settled attempt's decision can be overruled (one that
			// ended without D wrote what ended it), and a writable one's
			// only once its inspection found it completed.
			switch {
			case h.Launched && h.Policy.Writable && h.Completed:
				h.Completed = false
				h.Phase = Exporting
				return h, []Effect{Export{}}, nil
			case h.Launched && !h.Policy.Writable:
				return h, []Effect{WriteTerminal{}}, nil
			}
		case PrepDeadline:
			return h, nil, nil
		}
	case Inspecting:
		switch ev := ev.(type) {
		case Inspected:
			if ev.Err != nil {
				return h.hold(words.ResultNotSaved)
			}
			h.Completed = ev.Completed
			if ev.Completed {
				h.Phase = Settled
				return h, []Effect{WriteTerminal{}}, nil
			}
			h.Phase = Exporting
			return h, []Effect{Export{}}, nil
		case PrepDeadline:
			return h, nil, nil
		}
	case Exporting:
		switch ev.(type) {
		case Exported:
			h.Phase = Settled
			return h, []Effect{WriteTerminal{}}, nil
		case PrepDeadline:
			return h, nil, nil
		}
	case Written:
		switch ev := ev.(type) {
		case HostFilesRemoved:
			if !h.Launched || !h.Policy.HostFiles {
				break
			}
			if ev.Err != nil {
				return h.hold(words.PreparationNotRemoved)
			}
			return h.release()
		case PrepDeadline:
			return h, nil, nil
		}
	case Releasing:
		switch ev := ev.(type) {
		case StorageRemoved:
			if ev.Err != nil {
				return h.hold(words.StorageNotRemoved)
			}
			if h.Policy.Writable && !h.Completed {
				return h, []Effect{ReleaseCommit{}}, nil
			}
			h.Phase = Freed
			return h, []Effect{FreeSlot{}}, nil
		case CommitReleased:
			if !h.Policy.Writable || h.Completed {
				break
			}
			h.Phase = Freed
			return h, []Effect{FreeSlot{}}, nil
		case PrepDeadline:
			return h, nil, nil
		}
	}
	return h, nil, fmt.Errorf("%w: %s while %s", ErrUnexpected, ev.event(), h.Phase)
}

// stop is rule 1 of "Rules for the running state": a stop does not end
// the attempt. The first reason is kept; a preparation in flight is
// aborted, and a launched invocation not yet settled is cancelled. Once D
// has settled the reason is kept for the terminal write and nothing else
// happens; once the terminal write is saved a stop changes nothing.
func (h Holder) stop(r words.Reason) (Holder, []Effect, error) {
	if h.First != "" || r == "" || h.Phase >= Written {
		return h, nil, nil
	}
	h.First = r
	switch h.Phase {
	case Preparing:
		if h.PrepTimedOut {
			return h, nil, nil // already aborted
		}
		return h, []Effect{AbortPreparation{}}, nil
	case Launching, Running:
		if h.Launched {
			return h.cancel(StopReasonFor(r))
		}
	}
	return h, nil, nil
}

func (h Holder) cancel(r words.StopReason) (Holder, []Effect, error) {
	if h.CancelSent {
		return h, nil, nil
	}
	h.CancelSent = true
	return h, []Effect{Cancel{Reason: r}}, nil
}

// ended is an attempt that ends without D's invocation (a failed
// preparation or start, or one stopped first): its host-side files go
// before the terminal write, since no D ran.
func (h Holder) ended() (Holder, []Effect, error) {
	h.Phase = Settled
	if h.Policy.HostFiles {
		return h, []Effect{RemoveHostFiles{}}, nil
	}
	return h, []Effect{WriteTerminal{}}, nil
}

func (h Holder) release() (Holder, []Effect, error) {
	h.Phase = Releasing
	return h, []Effect{RemoveStorage{}}, nil
}

func (h Holder) hold(reason string) (Holder, []Effect, error) {
	h.Phase, h.Marker = Held, reason
	return h, []Effect{Mark{Reason: reason}}, nil
}
