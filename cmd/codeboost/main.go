// Command codeboost runs coding agents against tasks under the runner
// contract; see package cli for its commands and package app for what
// serve does.
package main

import (
	"context"
	"os"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/cmd/codeboost/cli"
	"github.com/codeboost/codeboost/dadapter/docker"
)

func main() { os.Exit(cli.Run(os.Args[1:], cli.Options{Engine: openDocker})) }

// openDocker is the binary's engine: Docker, through dadapter/docker.
func openDocker(ctx context.Context, opt app.EngineOptions) (app.Engine, error) {
	d, err := docker.Open(ctx, docker.Options{RunnerRoot: opt.RunnerRoot, CommitLimit: opt.CommitLimit, Log: opt.Log})
	if err != nil {
		return nil, err // not a nil *docker.D in a non-nil Engine
	}
	return d, nil
}
