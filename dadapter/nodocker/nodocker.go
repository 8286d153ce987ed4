// Package nodocker is the D of a `codeboost serve` with no agent configured
// (no runner.agent.image): a server that reviews plans. It runs the real
// coordinator (startup recovery over the database file and the runner
// root, admission, and shutdown in order) while every attempt fails at its
// first preparation step with ErrNoDocker and a clear message.
//
// What it can claim honestly: this build never creates a Docker object, so
// owner-scoped recovery has nothing of its own to remove or hand back, and it
// reports nothing. It cannot list objects without a runner label (that needs
// the Docker API), so the legacy check of step 2d waits for the real adapter.
// Every operation fails before spawning anything and never reports a process
// group; callbacks run on a goroutine of their own, because the runner's
// callbacks post to its loop and the loop may be the caller.
package nodocker

import (
	"context"
	"errors"

	"github.com/codeboost/codeboost/dadapter"
)

// ErrNoDocker is every operation's answer.
var ErrNoDocker = errors.New("no agent is configured (runner.agent.image in the configuration file), so this server cannot prepare or start agents")

// D implements dadapter.D without Docker.
type D struct{}

var _ dadapter.D = D{}

// Start fails; the live output sink it was given is D's to close.
func (D) Start(in dadapter.InvocationInput) (dadapter.Handle, error) {
	if in.Output != nil {
		in.Output.Close()
	}
	return nil, ErrNoDocker
}

func (D) PrepareTaskFilesystems(_ context.Context, _ dadapter.StorageOwner, _ dadapter.Source, _ func(dadapter.ProcessGroup), done func(dadapter.TaskFilesystems, error)) {
	go done(nil, ErrNoDocker)
}

// RemoveTaskFilesystems is never reached: no storage is ever handed out.
func (D) RemoveTaskFilesystems(_ dadapter.TaskFilesystems, done func(error)) {
	go done(ErrNoDocker)
}

func (D) CheckTaskTree(_ context.Context, _ dadapter.TaskFilesystems, _ string, _ []dadapter.FileOperation, done func(dadapter.TaskTree, error)) {
	go done(dadapter.TaskTree{}, ErrNoDocker)
}

func (D) InspectTaskChanges(_ context.Context, _ dadapter.TaskFilesystems, done func(dadapter.ChangeManifest, error)) {
	go done(dadapter.ChangeManifest{}, ErrNoDocker)
}

func (D) ExportTaskDiff(_ context.Context, _ dadapter.TaskFilesystems, _ int, done func(dadapter.ExportResult, error)) {
	go done(dadapter.ExportResult{}, ErrNoDocker)
}

func (D) CommitTaskChanges(_ context.Context, _ dadapter.TaskFilesystems, done func(dadapter.Bundle, error)) {
	go done(dadapter.Bundle{}, ErrNoDocker)
}

// ReleaseTaskCommit has nothing to release: no commit is ever taken.
func (D) ReleaseTaskCommit(_ dadapter.TaskFilesystems, done func(error)) {
	go done(nil)
}

func (D) CreateTaskClone(_ context.Context, _ string, _ dadapter.Source, _ func(dadapter.ProcessGroup), done func(dadapter.Clone, error)) {
	go done(dadapter.Clone{}, ErrNoDocker)
}

// RecoverLeftovers reports nothing: see the package comment.
func (D) RecoverLeftovers(_ context.Context, _ string, done func(dadapter.RecoveryReport, error)) {
	go done(dadapter.RecoveryReport{}, nil)
}
