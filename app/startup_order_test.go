package app_test

import (
	"context"
	"database/sql"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/runner/lock"
	"github.com/codeboost/codeboost/store"
)

// TestStartupRunsItsStepsInTheContractsOrder: startup is "the runner's
// recovery, then merge, Ask, suggestions, the requeue, then the server"
// (Run): Ask's startup runs "after the runner's recovery", the suggestion
// coordinator's after it, the requeue of the tasks recovery listed "once
// every lane has recovered", and "before the review server listens, so the
// first screen a person sees already shows the requeued attempt". Each
// step says so in the log, so the log is the order.
func TestStartupRunsItsStepsInTheContractsOrder(t *testing.T) {
	dir, db, token := firstStart(t)
	_, planKey, _ := leaveCrashedAttempt(t, db, dir, token)
	gh := httptest.NewServer(http.NotFoundHandler())
	defer gh.Close()
	t.Setenv("CODEBOOST_ORDER_TOKEN", "t0ken")
	opt := app.Options{DB: db, Listen: "127.0.0.1:0",
		Runner: app.RunnerConfig{Agent: app.AgentConfig{Image: "codeboost-agent:test"}},
		GitHub: &app.GitHubConfig{APIURL: gh.URL, TokenEnv: "CODEBOOST_ORDER_TOKEN"},
		Engine: func(context.Context, app.EngineOptions) (app.Engine, error) { return &quietEngine{}, nil }}
	_, out := serveUntilCleanup(t, opt, filepath.Join(dir, "ready"))
	logs := out.String()
	last := -1
	for _, step := range []string{
		"recovery: done; runner open",
		"ask: recovery done; open",
		"suggest: startup: failed 0 planning requests",
		"requeue of " + planKey, // refused here (item 1 has no approval): it waits for a person's Resume
		"serving " + db,
	} {
		i := strings.Index(logs, step)
		if i < 0 {
			t.Fatalf("the log lacks %q:\n%s", step, logs)
		}
		if i < last {
			t.Errorf("%q is logged before the step the contract puts ahead of it:\n%s", step, logs)
		}
		last = i
	}
}

// startupFailure is one way a startup step can fail: setup breaks the
// step for the database db in dir and returns the options to run with.
type startupFailure struct {
	name  string
	setup func(t *testing.T, dir, db string) app.Options
	want  string // in Run's error
	// logged: the step fails after the log said "serving" (ready's own
	// line comes before its file).
	logged bool
}

// rawExec runs q on db outside the Store, as a person or a broken disk
// would change it.
func rawExec(t *testing.T, db, q string) {
	t.Helper()
	conn, err := sql.Open("sqlite", store.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(q); err != nil {
		t.Fatal(err)
	}
}

// TestEveryStartupStepFailureStopsStartup: a step of startup that fails
// ends it with that step's error, before admission ("On a mismatch startup
// exits before admission"; "A stored token that is not 32 lowercase hex
// characters is refused before it is used"; "a configuration that asks for
// GitHub and cannot reach it must not start as if it could"): Run returns
// the error, nothing is served, and the lock is released ("A startup that
// fails closes the Store and releases the lock").
func TestEveryStartupStepFailureStopsStartup(t *testing.T) {
	for _, c := range []startupFailure{
		{"another runner holds the lock", func(t *testing.T, dir, db string) app.Options {
			l, err := lock.Acquire(db, lock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Release() })
			return app.Options{DB: db, Check: true}
		}, "Another codeboost runner is using this database.", false},
		{"the database is not a database", func(t *testing.T, dir, db string) app.Options {
			bad := filepath.Join(dir, "garbage.db")
			if err := os.WriteFile(bad, []byte(strings.Repeat("not a database ", 512)), 0o600); err != nil {
				t.Fatal(err)
			}
			return app.Options{DB: bad, Check: true}
		}, "not a database", false},
		{"the stored owner token is bad", func(t *testing.T, dir, db string) app.Options {
			rawExec(t, db, `UPDATE app_settings SET value = '../../etc' WHERE key = 'runner_owner_token'`)
			return app.Options{DB: db, Check: true}
		}, store.ErrBadOwnerToken.Error(), false},
		{"the runner root is not absolute", func(t *testing.T, dir, db string) app.Options {
			wd, err := os.Getwd()
			if err != nil {
				t.Fatal(err)
			}
			rel, err := filepath.Rel(wd, filepath.Join(dir, "root"))
			if err != nil {
				t.Fatal(err)
			}
			return app.Options{DB: db, Check: true, Root: rel}
		}, "must be an absolute path", false},
		{"the github token is not set", func(t *testing.T, dir, db string) app.Options {
			os.Unsetenv("CODEBOOST_UNSET_TOKEN")
			return app.Options{DB: db, Check: true, GitHub: &app.GitHubConfig{APIURL: "http://127.0.0.1:9", TokenEnv: "CODEBOOST_UNSET_TOKEN"}}
		}, "github: ", false},
		{"the listen address is taken", func(t *testing.T, dir, db string) app.Options {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return app.Options{DB: db, Listen: l.Addr().String()}
		}, "the review server cannot listen on", false},
		{"the ready file cannot be written", func(t *testing.T, dir, db string) app.Options {
			return app.Options{DB: db, Check: true, Ready: filepath.Join(dir, "no-such-dir", "ready")}
		}, "no-such-dir/ready", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, db, _ := firstStart(t)
			opt := c.setup(t, dir, db)
			logs, err := runBounded(t, opt)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Run: %v, want the error %q\n%s", err, c.want, logs)
			}
			if strings.Contains(logs, "serving ") && !c.logged {
				t.Errorf("startup went on to serve after the failure:\n%s", logs)
			}
			if c.name == "another runner holds the lock" {
				return // the lock is the test's
			}
			l, err := lock.Acquire(opt.DB, lock.Options{})
			if err != nil {
				t.Fatalf("after the failed start the lock is still held: %v", err)
			}
			l.Release()
		})
	}
}

// runBounded is runApp for a startup that should end by itself: one that
// instead serves is stopped with a SIGINT after 20 s and fails the test.
func runBounded(t *testing.T, opt app.Options) (logs string, err error) {
	t.Helper()
	out := &syncBuffer{}
	log, _ := app.NewLogger(out, app.LogText)
	opt.Log, opt.Stderr = log, io.Discard
	a, err := app.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run() }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		err = <-done
		t.Errorf("startup did not stop at the failure; it served until a SIGINT (Run: %v)", err)
	}
	return out.String(), err
}

// TestNewNeedsADatabase: "DB is required" (Options): an App without a
// database path is refused before it takes any lock or opens anything.
func TestNewNeedsADatabase(t *testing.T) {
	if a, err := app.New(app.Options{Check: true}); err == nil || a != nil || !strings.Contains(err.Error(), "the database path is required") {
		t.Fatalf("New without a DB: %v, %v", a, err)
	}
}

// TestALaneThatCannotOpenIsClosedAndStartupGoesOn: Ask's and live
// planning's startup failures are not startup's: "A failure is logged and
// leaves questions closed; the server runs on", and a live planning that
// cannot be built is logged ("live planning is off") and plans nothing.
// Each lane's owner token is refused like the runner's when the stored one
// is not 32 lowercase hex characters, and the log says which.
func TestALaneThatCannotOpenIsClosedAndStartupGoesOn(t *testing.T) {
	for _, c := range []struct {
		key        string
		want, lost string // in the log; lost: the lane's startup line that must not appear
	}{
		{"ask_owner_token", "questions are closed: Ask's owner token", "ask: recovery done; open"},
		{"planning_owner_token", "live planning is off", "suggest: startup: failed"},
	} {
		t.Run(c.key, func(t *testing.T) {
			_, db, _ := firstStart(t)
			gh := httptest.NewServer(http.NotFoundHandler())
			defer gh.Close()
			t.Setenv("CODEBOOST_LANE_TOKEN", "t0ken")
			opt := app.Options{DB: db, Check: true,
				Runner: app.RunnerConfig{Agent: app.AgentConfig{Image: "codeboost-agent:test"}},
				GitHub: &app.GitHubConfig{APIURL: gh.URL, TokenEnv: "CODEBOOST_LANE_TOKEN"},
				Engine: func(context.Context, app.EngineOptions) (app.Engine, error) { return &quietEngine{}, nil }}
			if logs, _, err := runApp(t, opt); err != nil || strings.Contains(logs, c.want) {
				t.Fatalf("a start with every token good: %v\n%s", err, logs) // and it stores the lane's token
			}
			rawExec(t, db, `UPDATE app_settings SET value = 'NOT-A-TOKEN' WHERE key = '`+c.key+`'`)
			logs, _, err := runApp(t, opt)
			if err != nil {
				t.Fatalf("a lane's failure stopped startup: %v\n%s", err, logs)
			}
			if !strings.Contains(logs, c.want) || !strings.Contains(logs, "NOT-A-TOKEN") || strings.Contains(logs, c.lost) ||
				!strings.Contains(logs, "serving "+db) {
				t.Errorf("want %q with the refused token, no %q, and serving:\n%s", c.want, c.lost, logs)
			}
		})
	}
}
