// Package dadapter is the D contract as Go types: what the runner may ask of
// the layer that runs agents in containers and owns task storage.
//
// Every operation that takes time reports back through a callback instead of
// returning a channel or blocking. The runner's callbacks only post an event to
// its loop, so the simulator, which calls them from the scenario's own
// goroutine, decides the order in which results arrive, and the real adapter,
// which calls them from its own goroutines, needs no extra plumbing. Each
// callback is called exactly once.
//
// The real Docker implementation lives in dadapter/docker (a later issue); this
// package holds interfaces and types only.
package dadapter

import (
	"context"
	"encoding/json"
	"time"

	"github.com/codeboost/codeboost/words"
)

// InvocationContext is the captured context sent with an invocation; D's
// stateVersion field carries the task's context generation.
type InvocationContext struct {
	SnapshotID         string `json:"snapshotId"`
	PlanID             string `json:"planId"`
	PlanRevision       int    `json:"planRevision"`
	AssignmentID       string `json:"assignmentId"`
	ReferencedCodeHash string `json:"referencedCodeHash"`
	StateVersion       int64  `json:"stateVersion"` // the context generation
}

// InvocationInput is what Start needs.
type InvocationInput struct {
	RunnerOwner string // 32 lowercase hex
	AttemptID   string
	Phase       string
	Deadline    time.Time // D enforces it; F runs no second timer
	Context     InvocationContext
	Storage     TaskFilesystems // never nil: every attempt kind gets storage
	Prompt      string
	Output      OutputSink // the live output; nil: D discards it
}

// OutputSink receives the live output of one invocation: the agent's stdout
// and stderr, in the order D reads them, for the people watching a running
// attempt. It is not a record: the bounded diagnostic in the Store is the
// only one, so a sink keeps at most a bounded tail and nothing once closed.
//
// D owns the sink from Start on. It calls Write from its output capture
// (whatever goroutine reads the container's output) and ignores Write's
// error: a watcher never stops the capture. It calls Close exactly once:
// when the capture has stopped, before it calls the settlement callback, or,
// if Start fails, before Start returns its error. D does not keep p after
// Write returns.
//
// A sink must never slow D down: Write is bounded and returns at once,
// dropping what a slow reader cannot take (it never waits for one).
type OutputSink interface {
	Write(p []byte) (int, error)
	Close() error
}

// Resource is one thing D could not confirm it removed.
type Resource struct {
	Kind  string // container, network, staging-directory
	ID    string // creation-time Docker ID, when one came back
	Label string // ownership label, or the path of a staging directory
}

// Settlement is what Settled delivers once the container and its output
// capture have stopped.
type Settlement struct {
	StopReason words.StopReason // empty when the agent exited on its own
	ExitCode   int
	Output     []byte // bounded; the agent's result (see Result)
	Diagnostic string // bounded; D's own words for a stop or failure
	Unreleased []Resource
}

// Result is what an agent's result (Settlement.Output) may carry when it
// is a JSON object: a one-line summary of what it did and what it spent.
// Both are optional and the object may carry other fields; a result that is
// not JSON carries neither. The runner publishes the result as it is; these
// fields are read only for display (elapsed time, tokens and cost per
// attempt and per task).
type Result struct {
	Summary string `json:"summary,omitempty"`
	Usage   *Usage `json:"usage,omitempty"`
}

// Usage is what an agent reports it spent on one invocation: model tokens
// read and written, and their cost in US dollars.
type Usage struct {
	InputTokens  int64   `json:"inputTokens"`
	OutputTokens int64   `json:"outputTokens"`
	CostUSD      float64 `json:"costUsd"`
}

// ParseUsage reads the usage an agent's result reports. It reports false
// when the result is not a JSON object, carries no "usage" object, or carries
// one with a negative count or cost, or a count that is not a whole number:
// an agent's bad arithmetic is not shown as a cost. Fields left out are 0.
func ParseUsage(result []byte) (Usage, bool) {
	var r Result
	if err := json.Unmarshal(result, &r); err != nil || r.Usage == nil {
		return Usage{}, false
	}
	u := *r.Usage
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CostUSD < 0 {
		return Usage{}, false
	}
	return u, true
}

// Handle is a started invocation. Settlement ends only after everything D
// started has stopped; D never settles early on its own timer.
type Handle interface {
	// OnSettled registers fn, called once with the settlement. If the
	// handle has already settled, fn is called at once.
	OnSettled(fn func(Settlement))
	// Cancel asks D to stop with reason. It does not wait, and a second
	// Cancel does not replace D's first stop reason.
	Cancel(reason words.StopReason)
}

// StorageOwner labels task storage: the runner, the attempt and the
// caller-chosen allocation ID.
type StorageOwner struct {
	RunnerOwner  string
	AttemptID    string
	AllocationID string
}

// TaskFilesystems is the capability for one attempt's task storage (the
// volumes and their keeper). F holds it; only D can build one, from an
// allocation or an authenticated recovery handle.
type TaskFilesystems interface {
	Owner() StorageOwner
	MetadataBaseline() string // recorded at allocation, needed by export
	Base() string             // the commit the storage was seeded from
}

// ExportResult is a bounded partial-output diff.
type ExportResult struct {
	Diff      []byte
	Truncated bool
}

// Bundle is a completed writable attempt's commit, taken out of task storage
// before it is removed.
type Bundle struct {
	Commit string
	Data   []byte
}

// ProcessGroup identifies one preparation subprocess group, reported in the
// same turn as the spawn so that F can save it before anything else runs.
type ProcessGroup struct {
	PGID      int
	StartedAt time.Time
	Identity  string // boot ID plus the leader's kernel start ticks
}

// Clone is a prepared task clone on the host, under the attempt directory.
type Clone struct {
	Dir  string
	Head string
}

// RecoveredStorage is an authenticated recovery handle for leftover storage.
type RecoveredStorage interface {
	TaskFilesystems
}

// Unowned is a resource recovery found but will not touch.
type Unowned struct {
	Kind   string // container, network, volume
	Name   string
	Reason string // no-runner-label, unknown-kind, inconsistent-storage
}

// RecoveryReport is what scoped recovery returns.
type RecoveryReport struct {
	Storage []RecoveredStorage
	Unowned []Unowned
}

// D is the contract the runner depends on.
type D interface {
	// Start is synchronous: it returns a handle that settles only after
	// everything it started has stopped, or an error with nothing left
	// running.
	Start(in InvocationInput) (Handle, error)

	// PrepareTaskFilesystems allocates task storage labelled with owner.
	// Cancelling ctx aborts it; done is called only after everything it
	// started has stopped, and an aborted allocation removes what it made.
	PrepareTaskFilesystems(ctx context.Context, owner StorageOwner, onGroup func(ProcessGroup), done func(TaskFilesystems, error))

	// RemoveTaskFilesystems removes task storage. It is never cancelled.
	RemoveTaskFilesystems(fs TaskFilesystems, done func(error))

	// ExportTaskDiff exports at most maxBytes of partial output; ctx carries
	// the 60-second deadline.
	ExportTaskDiff(ctx context.Context, fs TaskFilesystems, maxBytes int, done func(ExportResult, error))

	// CommitTaskChanges takes a completed writable attempt's work out of
	// task storage as a bundle.
	CommitTaskChanges(ctx context.Context, fs TaskFilesystems, done func(Bundle, error))

	// CreateTaskClone clones the task into a fresh directory under parent.
	// Cancelling ctx stops its process group (SIGTERM, grace, SIGKILL); done
	// is called only after every member has exited, and an aborted clone
	// removes its partial directory.
	CreateTaskClone(ctx context.Context, parent string, onGroup func(ProcessGroup), done func(Clone, error))

	// RecoverLeftovers acts only on resources labelled with runnerOwner.
	RecoverLeftovers(ctx context.Context, runnerOwner string, done func(RecoveryReport, error))
}
