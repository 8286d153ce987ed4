package app

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/web"
	"github.com/codeboost/codeboost/words"
)

// startServer is the last startup step before ready: the configured tasks
// exist in the Store, then the review server listens. It runs after
// recovery, as the contract's startServer runs setUpRunner before it
// listens, so no request meets a runner that has not recovered.
func (a *App) startServer() error {
	if err := a.ensureTasks(); err != nil {
		return err
	}
	if a.opt.Demo {
		if err := a.seedDemo(); err != nil {
			return err
		}
	}
	if a.server != nil || a.opt.Listen == "" || a.opt.Check {
		return nil // --check runs startup and exits: nothing to serve
	}
	tasks := make([]web.Task, len(a.opt.Tasks))
	for i, t := range a.opt.Tasks {
		tasks[i] = t.webTask()
	}
	opt := web.Options{
		Runner: a.runner, Store: a.store, Clock: a.clock, Tasks: tasks, Log: a.log,
		Diagnostics: web.DiagnosticsReader(a.runner.DiagnosticsDir()), Output: a.output, Demo: a.opt.Demo,
	}
	if a.ask != nil {
		opt.Questions = a.ask
	}
	if a.merge != nil {
		opt.Merges = a.merge
	}
	if a.suggest != nil {
		opt.Planning = a.suggest
	}
	if !a.opt.Demo {
		opt.Head = gitHead // the demo repository is not on disk
		opt.CommitDiff = a.commitDiff
	}
	srv, err := web.New(opt)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", a.opt.Listen)
	if err != nil {
		return fmt.Errorf("the review server cannot listen on %s: %w", a.opt.Listen, err)
	}
	r := a.recovery
	srv.SetRecovery(a.recoveryTook, len(r.LegacyCommands)+len(r.UnownedObjects)+len(r.UnownedPreparation)+len(r.UnmatchedStorage)+len(r.UnknownEntries)+len(r.UnsafeAttempts))
	a.server, a.url = srv, "http://"+l.Addr().String()+"/"
	go func() {
		if err := srv.Serve(l); err != nil {
			a.log.Error("the review server stopped serving", "err", err)
		}
	}()
	return nil
}

// ensureTasks creates each configured task the first time the server
// names it, in review with an empty plan at revision 1: a person imports
// the plan, approves its items and starts it. An existing task is left as
// it is.
func (a *App) ensureTasks() error {
	for _, t := range a.opt.Tasks {
		snapshot := t.Snapshot
		if snapshot == "" {
			snapshot = "initial"
		}
		var created bool
		if err := a.store.Update(func(tx *store.Tx) (err error) {
			created, err = tx.EnsureTask(store.NewTask{Identity: t.identity(), SnapshotID: snapshot, Status: words.StatusInReview})
			return err
		}); err != nil {
			return fmt.Errorf("task %s: %w", t.Name, err)
		}
		if created {
			a.log.Info("task " + t.Name + " created (in review, no plan yet)")
		}
	}
	return nil
}

// stopServer closes a review server that listened before startup failed.
func (a *App) stopServer() {
	if a.server != nil && a.url != "" {
		a.server.SetStopping()
		a.server.Close()
	}
}

// gitHead reads a configured task's repository HEAD for the review load.
// A task with no repository has none.
func gitHead(t web.Task) (string, error) {
	if t.Repository == "" {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", t.Repository, "rev-parse", "--verify", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD in %s: %w", t.Repository, err)
	}
	return strings.TrimSpace(string(out)), nil
}
