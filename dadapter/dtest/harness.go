package dtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
)

// Harness makes the implementation under test, once per case.
type Harness interface {
	// New returns a fresh world for one case: one runner process with its
	// D, nothing labelled for either of the harness's runners yet. It
	// registers in t whatever cleanup the world needs.
	New(t *testing.T) Impl
}

// Gaps is what a harness may also implement: the cases its implementation
// is known to fail, by name, each with why and what would fix it. Run
// skips them, naming the gap, so a disagreement between the simulator and
// the contract is written down where the suite runs instead of in a case
// left out.
type Gaps interface {
	KnownGaps() map[string]string
}

// Impl is one case's world: the D under test and what the suite needs
// beside the contract. Everything else goes through dadapter.D.
//
// The suite calls it from the test goroutine only, but for Objects and Now,
// which it also calls from inside a settlement callback (on D's goroutine,
// or inline in the simulator) to see what was left at that moment.
type Impl interface {
	// D is the current runner process's D. It changes only on Restart.
	D() dadapter.D

	// Owner is this runner's token; OtherOwner another database's runner
	// on the same machine (the contract's "several databases can have
	// live runners on the same machine at once"), whose resources this
	// runner's recovery must never touch. Both are 32 lowercase hex, fixed
	// for the world, so the harness can clean up after a failed case.
	Owner() string
	OtherOwner() string

	// Source is a user repository and its HEAD commit, the one the
	// storage allocation resolves when Source.Commit is "" (for Docker a
	// real git repository; for the simulator a name and its fixed base).
	// It holds a README.md, which the "edit" agent appends to, and a
	// .gitignore that ignores *.log, the kind of file the "write-ignored"
	// agent writes.
	Source(t *testing.T) dadapter.Source

	// AttemptDir makes an empty attempt directory for attempt of owner,
	// where the runner puts it (the clone's parent): the Docker D reads
	// the runner from it, <RunnerRoot>/<owner>/attempts/<attempt>, since
	// CreateTaskClone takes no owner.
	AttemptDir(t *testing.T, owner, attemptID string) string

	// Profile runs the fake agent in mode (dadapter/docker/internal/
	// fakeagent's modes; the simulator plays the same ones): "succeed",
	// "fail", "fail-loud", "flood", "sleep", "ignore-term", "child-ignore-term",
	// "edit", "write-ignored", "nest-repo". The suite may set OutputLimit
	// on what it returns; the mode is the last element of Argv.
	Profile(mode string) dadapter.AgentProfile

	// Now is the world's time, against which the suite sets deadlines and
	// measures them: the wall clock for Docker, the script's clock for the
	// simulator (which Wait and Idle advance).
	Now() time.Time

	// Wait lets the implementation make progress until ready reports
	// true, and fails the test (naming what) if it does not within the
	// implementation's bound. For the Docker D, callbacks arrive on its
	// goroutines and Wait polls with a timeout; the simulator's callbacks
	// run inline, so its harness plays the script (the fake agent's mode,
	// a stop's grace, the deadline) one step per poll. ready must be
	// cheap and safe to call from the test goroutine.
	Wait(t *testing.T, what string, ready func() bool)

	// Idle lets the implementation run a while with nothing expected: long
	// enough that a callback called a second time, or an object removed
	// late, would show.
	Idle(t *testing.T)

	// Crash drops the runner process as a kill would: no shutdown code
	// runs, callbacks into it are gone, and what outlives a process
	// (containers, volumes, networks) outlives it. Restart then starts a
	// new process for the same world and owners and returns its D (which D
	// also returns from now on). The suite uses no handle or storage value
	// of the crashed process after Restart.
	Crash()
	Restart() dadapter.D

	// PlantLegacy makes an object of kind (container, network or volume)
	// named name the way a build before runner labels did: codeboost
	// labels, no runner label. RemoveByCommand is the person running the
	// command recovery printed for one (dadapter.RemoveCommand's form;
	// ParseRemoveCommand reads it); it fails the test if the command does
	// not remove an existing object.
	PlantLegacy(t *testing.T, kind dadapter.ResourceKind, name string)
	RemoveByCommand(t *testing.T, command string)

	// Objects lists what the implementation still holds labelled for
	// owner: Docker lists containers, volumes and networks by their runner
	// label; the simulator reads its task storage and unsettled,
	// unremoved handles. An error means it could not tell.
	Objects(owner string) ([]Object, error)
}

// Object is one thing an implementation holds for a runner.
type Object struct {
	Role    Role
	Attempt string // its attempt label
	Name    string // how a failure message names it
}

func (o Object) String() string { return fmt.Sprintf("%s %s (attempt %s)", o.Role, o.Name, o.Attempt) }

// Role is what D made an object for, as the suite tells them apart: an
// invocation's objects must be gone at settlement, task storage must stay
// until RemoveTaskFilesystems.
type Role string

// The roles.
const (
	RoleAgent   Role = "agent"   // an invocation's container, or a network D made for it
	RoleStorage Role = "storage" // a part of task storage: a volume, the keeper
	RoleHelper  Role = "helper"  // anything else D made for the runner: a seeder, an export, inspect or commit container
)
