// Package docker is the real D: the D contract (package dadapter) played
// by a Docker engine through the moby client, with task storage in
// labelled volumes behind a keeper container and the commits codeboost
// makes kept in the runner-owned repository (dadapter/gitrepo).
//
// It speaks only the engine's API, never the host paths of its objects:
// the staged commit goes into task storage and the partial output comes out of it
// through the archive API, so the same adapter works against a remote
// engine (DOCKER_HOST). Every object it makes carries the owner labels
// (labels.go), and every cleanup proves ownership either by the Docker ID
// captured at creation or by all three owner labels.
//
// Every operation that takes time runs on a goroutine of its own and
// reports through the callback the contract names, exactly once.
//
// Files, one part of the contract each:
//
//	labels.go   "Token in every request": labels, allocation IDs
//	start.go    "Launch setup does not block the server", "Rule for D":
//	            Start, the handle, the lock-down of agent containers
//	supervise.go decision 4: stop escalation, the cleanup window,
//	            settlement with Unreleased
//	storage.go  task storage: allocation, seeding, removal
//	export.go   "Partial output": ExportTaskDiff
//	commit.go   CommitTaskChanges and the runner-owned repository's intake
//	clone.go    CreateTaskClone
//	recover.go  "Scoped recovery", "Recovered storage handles",
//	            "Unowned resources"
package docker

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
)

// The contract's windows. Each is an Options field, so that one test runs
// it at full length and the rest shortened.
const (
	DefaultGrace          = 10 * time.Second // stop signal to kill
	DefaultCleanupWindow  = 60 * time.Second // retries after the first cleanup failure
	DefaultCleanupRetry   = time.Second      // between cleanup retries
	DefaultCallTimeout    = 30 * time.Second // one cleanup call at most
	DefaultOutputLimit    = 1 << 20          // the agent's result (stdout)
	DefaultMemoryBytes    = 2 << 30
	DefaultNanoCPUs       = 2_000_000_000
	DefaultPIDs           = 512
	DefaultAgentUser      = "1000:1000"
	DefaultExportMaxBytes = 1 << 20
)

// Options configure the adapter. Zero fields take the defaults above.
type Options struct {
	// Client talks to the engine. Required.
	Client *client.Client
	// RunnerRoot holds the runner-owned repositories
	// (<RunnerRoot>/<owner>/repositories) and D's staging directories.
	RunnerRoot string
	// HelperImage is the image of the keeper, seeder, export, inspect,
	// tree-check and commit containers (image.Helper builds it).
	HelperImage string

	Grace         time.Duration
	CleanupWindow time.Duration
	CleanupRetry  time.Duration
	CallTimeout   time.Duration
	AgentUser     string // uid:gid the agent runs as; must own nothing but the task folder
	// CommitLimit bounds the added and changed files of a commit
	// (dadapter.CommitTooLarge); 0: dadapter.DefaultCommitLimit.
	CommitLimit int64

	Log *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Client == nil {
		return o, errors.New("docker: Options.Client is required")
	}
	if o.RunnerRoot == "" {
		return o, errors.New("docker: Options.RunnerRoot is required")
	}
	if o.HelperImage == "" {
		return o, errors.New("docker: Options.HelperImage is required")
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.CleanupWindow <= 0 {
		o.CleanupWindow = DefaultCleanupWindow
	}
	if o.CleanupRetry <= 0 {
		o.CleanupRetry = DefaultCleanupRetry
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.CommitLimit <= 0 {
		o.CommitLimit = dadapter.DefaultCommitLimit
	}
	if o.AgentUser == "" {
		o.AgentUser = DefaultAgentUser
	}
	// The seed writes the work tree as this owner, by number: a user that
	// is not uid:gid is refused here, before any storage is made for it.
	if _, _, err := numericUser(o.AgentUser); err != nil {
		return o, fmt.Errorf("docker: Options.AgentUser: %w", err)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// D is the Docker implementation of dadapter.D. It is safe for concurrent
// use.
type D struct {
	cli *client.Client
	opt Options

	mu sync.Mutex
	// handles are the invocations that have not settled, by attempt ID:
	// Start refuses an attempt ID another one still owns.
	handles map[string]*handle
	// held is the task storage this process allocated and has not
	// removed, by allocation ID (the contract's process-local ownership
	// map): recovery refuses while an owner's storage is held here, and an
	// allocation ID held here is refused.
	held map[string]*storage
}

var _ dadapter.D = (*D)(nil)

// New returns the adapter. It makes no engine call.
func New(opt Options) (*D, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	return &D{cli: opt.Client, opt: opt, handles: map[string]*handle{}, held: map[string]*storage{}}, nil
}
