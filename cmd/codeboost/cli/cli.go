// Package cli is the codeboost command line: it parses a command and its
// flags and calls package app, which owns startup and shutdown.
//
//	codeboost serve [--config FILE] [--db PATH] [--listen ADDR] [--root DIR] [--ready FILE] [--check] [--log-format text|json]
//	codeboost serve --db PATH --release-preparation ATTEMPT_ID [--root DIR] [--log-format text|json]
//	codeboost help [serve]
//
// Help (--help, -h, help) goes to stdout with exit code 0; a usage error
// goes to stderr with exit code 2; a runtime error goes to stderr with exit
// code 1. Logs go to stdout (text or JSON); errors and what a second signal
// does go to stderr as plain text.
//
// It imports app, ids and the standard library (and, for now, failpoints):
// no scenario language, no simulator and no scenario files. The scenario
// replay is a go test entry point, scenarios' TestReplay (see the README).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/ids"
)

// Options are what a caller of Run passes besides the arguments.
type Options struct {
	Stdout, Stderr io.Writer // nil: os.Stdout, os.Stderr
	// Engine opens the container engine a configured agent runs on (the
	// binary's main passes Docker's); nil refuses an agent configuration.
	Engine app.OpenEngine
}

// The exit codes.
const (
	exitOK      = 0
	exitRuntime = 1 // startup or shutdown failed; the message says why
	exitUsage   = 2 // the command line is wrong
)

const usage = `Usage:
  codeboost serve --config FILE [flags]  run the review server and the runner until SIGINT or SIGTERM
  codeboost serve --demo                 run the demo (a simulated agent) and print its URL
  codeboost help [COMMAND]            show help

Run 'codeboost serve --help' for serve's flags.
`

const serveUsage = `Usage:
  codeboost serve [--config FILE] [--db PATH] [--listen ADDR] [--root DIR] [--ready FILE] [--check] [--log-format text|json]
  codeboost serve [--config FILE] [--db PATH] --release-preparation ATTEMPT_ID [--root DIR] [--log-format text|json]

Takes the single-runner lock, opens and migrates the Store, reads the runner
owner token, runs startup recovery, creates the configured tasks, and serves
the review screen and its API until SIGINT or SIGTERM, then shuts down in
order. The database comes from --db or the configuration file's "store". A second signal during startup stops at once (exit 130);
during shutdown it prints "Still stopping agents…" and skips nothing.

Flags:
`

// Run runs one command line and returns the process exit code.
func Run(args []string, opt Options) int {
	stdout, stderr := opt.Stdout, opt.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr, opt.Engine)
	case "help", "-h", "-help", "--help":
		return help(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "codeboost: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// help is `codeboost help [COMMAND]`.
func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, usage)
	case len(args) == 1 && args[0] == "serve":
		fl, _ := serveFlags(io.Discard)
		printServeUsage(stdout, fl)
	default:
		fmt.Fprintf(stderr, "codeboost help: unknown command %q\n\n%s", strings.Join(args, " "), usage)
		return exitUsage
	}
	return exitOK
}

// serveArgs are serve's flags, spelled as the README spells them.
type serveArgs struct {
	config, db, listen, root, ready, release, logFormat string
	check, demo                                         bool
}

// serveFlags defines serve's flags on a FlagSet whose parse errors go to w.
func serveFlags(w io.Writer) (*flag.FlagSet, *serveArgs) {
	var a serveArgs
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(w)
	fl.BoolVar(&a.demo, "demo", false, "run the demo: the real server, Store and runner on a simulated agent, with a plan ready to start (SQLite in a temporary directory unless --db)")
	fl.StringVar(&a.config, "config", "", "the configuration `FILE` (JSON: listen, store, runner, tasks; see the README)")
	fl.StringVar(&a.db, "db", "", "the SQLite database `PATH` (created if missing; overrides the file's store)")
	fl.StringVar(&a.listen, "listen", "", "the review server's `ADDR` (default: the file's listen, else "+app.DefaultListen+"; '' for none)")
	fl.StringVar(&a.root, "root", "", "the runner root `DIR` (default: <db dir>/codeboost-runner)")
	fl.StringVar(&a.ready, "ready", "", "write `FILE` once startup has finished (for scripts)")
	fl.BoolVar(&a.check, "check", false, "run startup (lock, Store, migrations, checks, recovery), then shut down and exit instead of serving")
	fl.StringVar(&a.release, "release-preparation", "", "release the unknown preparation of `ATTEMPT_ID` that recovery's step 7 reported, then exit")
	fl.StringVar(&a.logFormat, "log-format", app.LogText, "the log `FORMAT`: text or json")
	fl.Usage = func() {} // serve prints the usage itself: to stdout for help, to stderr for an error
	return fl, &a
}

// printServeUsage writes serve's usage and its flags, spelled --name.
func printServeUsage(w io.Writer, fl *flag.FlagSet) {
	fmt.Fprint(w, serveUsage)
	fl.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%-34s %s\n", line, text)
	})
}

// serve is `codeboost serve`: it checks the flags and runs the app.
func serve(args []string, stdout, stderr io.Writer, engine app.OpenEngine) int {
	fl, a := serveFlags(stderr)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printServeUsage(stdout, fl)
			return exitOK
		}
		printServeUsage(stderr, fl) // after the flag package's own line saying what is wrong
		return exitUsage
	}
	usageError := func(msg string) int {
		fmt.Fprintf(stderr, "codeboost serve: %s\nRun 'codeboost serve --help' for usage.\n", msg)
		return exitUsage
	}
	if fl.NArg() != 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fl.Arg(0)))
	}
	cfg := app.Config{Listen: app.DefaultListen}
	if a.config != "" {
		var err error
		if cfg, err = app.LoadConfig(a.config); err != nil {
			fmt.Fprintf(stderr, "codeboost serve: --config: %v\n", err)
			return exitUsage
		}
	}
	fl.Visit(func(f *flag.Flag) {
		if f.Name == "listen" {
			cfg.Listen = a.listen
		}
	})
	if a.db != "" {
		cfg.Store = a.db
	}
	if a.demo {
		if a.config != "" || a.release != "" {
			return usageError("--demo takes neither --config nor --release-preparation")
		}
		cfg.Tasks = app.DemoTasks()
		cfg.Runner.Slots = 2
		if cfg.Store == "" {
			dir, err := os.MkdirTemp("", "codeboost-demo-")
			if err != nil {
				fmt.Fprintln(stderr, err)
				return exitRuntime
			}
			defer os.RemoveAll(dir)
			cfg.Store = filepath.Join(dir, "codeboost.db")
		}
	}
	if a.root != "" {
		cfg.Runner.Root = a.root
	}
	if cfg.Store == "" {
		return usageError("--db PATH (or a configuration file with \"store\") is required")
	}
	if a.release != "" && !ids.ValidUUID(a.release) {
		return usageError(fmt.Sprintf("--release-preparation: attempt ID %q is not a lowercase UUID v4", a.release))
	}
	log, err := app.NewLogger(stdout, a.logFormat)
	if err != nil {
		return usageError("--log-format: " + err.Error())
	}
	ap, err := app.New(app.Options{
		DB: cfg.Store, Root: cfg.Runner.Root, Ready: a.ready, Check: a.check, ReleasePreparation: a.release,
		Listen: cfg.Listen, Tasks: cfg.Tasks, Runner: cfg.Runner, GitHub: cfg.GitHub, Demo: a.demo,
		Log: log, Stderr: stderr, Engine: engine,
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitRuntime
	}
	if err := ap.Run(); err != nil {
		fmt.Fprintln(stderr, err)
		return exitRuntime
	}
	return exitOK
}
