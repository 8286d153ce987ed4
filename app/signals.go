package app

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/codeboost/codeboost/words"
)

// watchSignals catches SIGINT and SIGTERM from the very start of Run. The
// first closes stop: during startup it waits for startup to finish, then
// shutdown runs. A second one during startup stops the process at once
// with exit code 130, which the next start's recovery treats like a crash
// (the lock goes with the process). During shutdown every further signal
// prints "Still stopping agents…" and shutdown goes on to its end.
//
// unwatch stops catching signals and ends the watcher.
func (a *App) watchSignals() (stop <-chan struct{}, unwatch func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	stopped, done := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-sigs:
			close(stopped)
		case <-done:
			return
		}
		for {
			select {
			case <-sigs:
				if a.starting.Load() {
					fmt.Fprintln(a.stderr, "codeboost: stopped during startup")
					os.Exit(130)
				}
				fmt.Fprintln(a.stderr, words.StillStopping)
			case <-done:
				return
			}
		}
	}()
	return stopped, func() {
		signal.Stop(sigs)
		close(done)
	}
}
