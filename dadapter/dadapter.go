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
// The real Docker implementation lives in dadapter/docker, the simulated
// one in dadapter/simd; this package holds the contract's types, and
// dadapter/dtest holds the one conformance suite both must pass.
package dadapter

import (
	"context"
	"encoding/json"
	"errors"
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

// InvocationInput is what Start needs: who asks, what for, and everything
// the agent works with (its storage, the prepared clone, the prompt and the
// agent profile).
type InvocationInput struct {
	RunnerOwner string // 32 lowercase hex
	AttemptID   string
	Phase       string
	Deadline    time.Time // D enforces it, setup included; F runs no second timer
	Context     InvocationContext
	Storage     TaskFilesystems // never nil: every attempt kind gets storage
	Clone       Clone           // the prepared task clone; its Head is the storage's Base
	Prompt      string
	Profile     AgentProfile
	Output      OutputSink // the live output; nil: D discards it
	// Tree is CheckTaskTree's answer for this storage, checked last
	// before launch: its Head is the Clone's, and Start mounts each of
	// its Gitlinks empty and read-only over the work tree, so the agent
	// can write nothing inside a submodule. Start refuses a Tree whose
	// Head is not Clone.Head.
	Tree TaskTree
}

// FileOperation is one file operation a plan item declares (plan.FileOp,
// without importing the plan format): Op is create, modify, delete or
// rename; To is set for a rename only. Paths are slash-separated and
// relative to the repository root.
type FileOperation struct {
	Op   string
	Path string
	To   string
}

// TaskTree is checkTaskTree's answer (#81): the task storage's work tree
// is a clean copy of Head, and every declared file operation fits Head's
// tree. Gitlinks are Head's submodule paths, which Start mounts empty and
// read-only.
type TaskTree struct {
	Head     string
	Gitlinks []string
}

// ErrTaskTreeRefused is checkTaskTree's refusal (wrapped, with what did
// not fit): the work tree is not a clean copy of the head, or an operation
// does not fit it (a create of a path that exists, a modify or delete of
// one that does not, a rename from a missing path or onto an existing
// one, an operation on a path inside a submodule or through a link). F
// records it as a safety finding; any other error fails the attempt.
var ErrTaskTreeRefused = errors.New("task tree refused")

// AgentProfile is how an agent runs: its image and command, the
// credentials it may see, and the limits of its container. It is
// configuration, the same for every attempt of a runner.
type AgentProfile struct {
	Image string   // a local image reference; D never pulls
	Argv  []string // the command; empty: the image's own
	// Env names the host environment variables passed to the agent (an
	// allow-list for credentials); D copies only these, and only when set.
	Env []string
	// Network is the Docker network the agent joins; "" means none (the
	// agent has only loopback).
	Network     string
	MemoryBytes int64 // 0: D's default
	NanoCPUs    int64 // 0: D's default
	PIDs        int64 // 0: D's default
	// OutputLimit bounds the agent's result (its standard output); past it
	// D stops the agent with StopOutputLimit. 0: D's default.
	OutputLimit int
}

// Source is what task storage and the task clone are made from: the
// user's repository (never written) and the commit, the head the Store
// recorded for the task. An empty Commit means the repository's HEAD,
// resolved once by the storage allocation and reported as its Base; the
// clone is then asked for that Base.
type Source struct {
	Repository string
	Commit     string
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

// ResourceKind names the kinds of object D makes or finds.
type ResourceKind string

// The resource kinds.
const (
	KindContainer        ResourceKind = "container"
	KindNetwork          ResourceKind = "network"
	KindVolume           ResourceKind = "volume"
	KindStagingDirectory ResourceKind = "staging-directory"
)

// Resource is one thing D could not confirm it removed.
type Resource struct {
	Kind  ResourceKind
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
	// Stderr is the last StderrTail bytes the agent wrote to its standard
	// error: a failed attempt's diagnostic quotes its end ("failed, with
	// the bounded exit and stderr summary"). It is kept nowhere else: "Raw
	// stdout and stderr are never kept beyond the bounded diagnostic."
	Stderr     []byte
	Unreleased []Resource
}

// StderrTail bounds Settlement.Stderr.
const StderrTail = 4096

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
// allocation or an authenticated recovery handle: the interface is sealed
// by an unexported method, which a type gets only by embedding
// StorageSeal, and internal/importrules lets only D's packages name
// StorageSeal. So F can never forge a handle from a report's fields.
type TaskFilesystems interface {
	Owner() StorageOwner
	MetadataBaseline() string // recorded at allocation, needed by export
	Base() string             // the commit the storage was seeded from
	taskStorage()
}

// StorageSeal is embedded by D's task storage types, and only by them.
type StorageSeal struct{}

//lint:ignore U1000 the method is the seal: TaskFilesystems names it, so only types embedding StorageSeal satisfy it
func (StorageSeal) taskStorage() {}

// ExportResult is a bounded partial-output diff.
type ExportResult struct {
	Diff      []byte
	Truncated bool
}

// ChangeKind is how a path of the work tree differs from the base.
type ChangeKind string

// The change kinds, as git's name-status letters name them (A, M, D, T).
const (
	ChangeAdded       ChangeKind = "added"
	ChangeModified    ChangeKind = "modified"
	ChangeDeleted     ChangeKind = "deleted"
	ChangeTypeChanged ChangeKind = "type-changed" // a file became a link, or the other way
)

// Change is one changed path, slash-separated, relative to the
// repository root.
type Change struct {
	Path string
	Kind ChangeKind
}

// Symlink is a symbolic link the agent made or changed, with its target
// as written.
type Symlink struct {
	Path   string
	Target string
}

// ChangeManifest is inspectTaskChanges' answer (#66): what the agent left
// in task storage, measured against the base and the metadata baseline.
// Changes is what a commit of the work tree would hold; every other list
// names something the commit would leave out or that git does not show,
// which the runner's audit judges (runner/audit.go). Paths are sorted and
// relative to the repository root; a list may be cut at MaxManifestPaths,
// and Cut says so.
type ChangeManifest struct {
	// MetadataChanged: the metadata (.git) is not what allocation seeded.
	// An agent commit is one; nothing else is listed then, because git
	// run over changed metadata cannot be trusted to list the rest.
	MetadataChanged bool
	Changes         []Change
	Symlinks        []Symlink // changed or new symbolic links, with their targets
	Ignored         []string  // new paths the base's own ignore rules ignore
	Nested          []string  // untracked nested repositories
	GitlinkContent  []string  // submodule directories that are not empty
	DotGit          []string  // entries named .git (any case) below the root
	Special         []string  // fifos and sockets
	Refused         []string  // untracked paths git will not add
	Cut             bool      // some list was longer than MaxManifestPaths
}

// MaxManifestPaths bounds each of a manifest's lists.
const MaxManifestPaths = 10000

// MaxTreeLeaves bounds a Bundle's Leaves: a scope checkpoint keeps them in
// one Store row, which must stay bounded however large the repository is
// (#88). A tree with more leaves is reported cut, never listed in part.
const MaxTreeLeaves = 100000

// DefaultCommitLimit is the commit limit when the configuration names
// none (runner.agent.commitLimitBytes).
const DefaultCommitLimit = 256 << 20

// CommitTooLarge is CommitTaskChanges' refusal of a work tree whose added
// and changed files hold more than D's commit limit: nothing is committed,
// and the attempt fails with this diagnostic (words.CommitOverLimit) and
// its partial output, as for any commit that could not be taken.
type CommitTooLarge struct {
	Bytes int64 // the added and changed files, together
	Limit int64
}

func (e *CommitTooLarge) Error() string { return words.CommitOverLimit(e.Bytes, e.Limit) }

// Bundle is a completed writable attempt's commit, taken out of task storage
// before it is removed.
type Bundle struct {
	Commit string
	Data   []byte
	// Leaves are the paths of every leaf entry (file, link, gitlink) of
	// Commit's tree, sorted, slash-separated, relative to the root: what a
	// scope checkpoint keeps so that the Store can validate a plan against
	// the commit's tree without Git (#88). Nil when the listing was longer
	// than MaxTreeLeaves, or than D reads (64 MiB of paths for the Docker
	// D); LeavesCut is then true.
	Leaves    []string
	LeavesCut bool
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

// UnownedReason says why recovery left a resource alone.
type UnownedReason string

// The reasons, as the contract words them.
const (
	NoRunnerLabel       UnownedReason = "no-runner-label"
	UnknownKind         UnownedReason = "unknown-kind"
	InconsistentStorage UnownedReason = "inconsistent-storage"
)

// Unowned is a resource recovery found but will not touch. D words the
// exact command a person runs to remove it, because only D knows how the
// object was made (F prints Remove as it is).
type Unowned struct {
	Kind   ResourceKind // container, network, volume
	Name   string
	Reason UnownedReason
	Remove string // e.g. "docker container rm -f NAME"
}

// RemoveCommand is the command that removes a Docker object of kind by
// name: what a person runs for a leftover D will not touch.
func RemoveCommand(kind ResourceKind, name string) string {
	switch kind {
	case KindNetwork:
		return "docker network rm " + name
	case KindVolume:
		return "docker volume rm " + name
	}
	return "docker container rm -f " + name
}

// RecoveryReport is what scoped recovery returns.
type RecoveryReport struct {
	Storage []RecoveredStorage
	Unowned []Unowned
}

// D is the contract the runner depends on.
type D interface {
	// Start returns its handle at once and does no blocking I/O on the
	// caller's goroutine: the setup (container create, validation, start)
	// runs inside the handle's life, Cancel during setup stops the call in
	// flight, the invocation deadline bounds setup too, and the handle
	// settles only after everything it started has stopped, setup's
	// cleanup included. A setup failure settles the handle with a stop
	// reason and a diagnostic. Start returns an error only when it
	// allocated nothing: invalid input, a deadline already passed, or an
	// attempt ID another handle still owns (the contract's "Rule for D").
	Start(in InvocationInput) (Handle, error)

	// PrepareTaskFilesystems allocates task storage labelled with owner
	// and seeds it from src (the runner-owned repository's copy of the
	// commit). Cancelling ctx aborts it; done is called only after
	// everything it started has stopped, and an aborted allocation removes
	// what it made.
	PrepareTaskFilesystems(ctx context.Context, owner StorageOwner, src Source, onGroup func(ProcessGroup), done func(TaskFilesystems, error))

	// RemoveTaskFilesystems removes task storage. It is never cancelled.
	RemoveTaskFilesystems(fs TaskFilesystems, done func(error))

	// ExportTaskDiff exports at most maxBytes of partial output; ctx carries
	// the 60-second deadline.
	ExportTaskDiff(ctx context.Context, fs TaskFilesystems, maxBytes int, done func(ExportResult, error))

	// CheckTaskTree is checkTaskTree (#81), called last before launch with
	// the clone's head and the plan item's file operations: it proves the
	// storage's work tree a clean copy of head and every operation a fit
	// for head's tree, and answers the gitlinks Start must mount. A
	// refusal wraps ErrTaskTreeRefused; any other error is a check that
	// could not run. It reads and never changes the storage.
	CheckTaskTree(ctx context.Context, fs TaskFilesystems, head string, ops []FileOperation, done func(TaskTree, error))

	// InspectTaskChanges is inspectTaskChanges (#66): the change manifest
	// of fs's work tree against its base and its metadata baseline, for the
	// runner's file-scope audit before publication and for the audit of a
	// failed run. It reads and never changes the storage. An error is an
	// inspection that refused, which the audit counts as a finding.
	InspectTaskChanges(ctx context.Context, fs TaskFilesystems, done func(ChangeManifest, error))

	// CommitTaskChanges takes a completed writable attempt's work out of
	// task storage as a bundle, and takes the bundle into the runner-owned
	// repository under the attempt's ref (refs/codeboost/attempts/<id>)
	// only if it is a single commit on the storage's base. Changes over
	// D's commit limit are refused with a *CommitTooLarge, before any of
	// them is read.
	CommitTaskChanges(ctx context.Context, fs TaskFilesystems, done func(Bundle, error))

	// ReleaseTaskCommit drops the attempt's ref in the runner-owned
	// repository: F calls it after the terminal write and the storage's
	// removal for a writable attempt that did not complete, so a commit a
	// refused publication fetched does not stay referenced. Dropping a ref
	// that is not there succeeds. It is never cancelled.
	ReleaseTaskCommit(fs TaskFilesystems, done func(error))

	// CreateTaskClone clones src.Commit from the runner-owned repository
	// into a fresh directory under parent. Cancelling ctx stops its process
	// group (SIGTERM, grace, SIGKILL); done is called only after every
	// member has exited, and an aborted clone removes its partial
	// directory.
	CreateTaskClone(ctx context.Context, parent string, src Source, onGroup func(ProcessGroup), done func(Clone, error))

	// RecoverLeftovers acts only on resources labelled with runnerOwner.
	RecoverLeftovers(ctx context.Context, runnerOwner string, done func(RecoveryReport, error))
}
