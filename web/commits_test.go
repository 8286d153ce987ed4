package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/store"
)

// TestRunnerCommitsOwnTheHead: the contract's "Runner-owned repository"
// Review row. A task without runner commits observes the user's HEAD (the
// load records it in the ledger); once an attempt has committed, the load
// shows the head the Store recorded and no longer asks for the user's
// HEAD, whose older commit would roll the task back. The diff view shows
// the completed attempt's commit, read from the runner-owned repository
// against the commit its storage was seeded from.
func TestRunnerCommitsOwnTheHead(t *testing.T) {
	var userHead atomic.Value
	userHead.Store("u1")
	var asked atomic.Int32
	var diffArgs atomic.Value
	w := newUIWorld(t, worldOptions{tasks: []uiTask{parserFix},
		head: func(Task) (string, error) { asked.Add(1); return userHead.Load().(string), nil },
		commitDiff: func(_ context.Context, w io.Writer, _ Task, base, commit string, _ int) (bool, error) {
			diffArgs.Store(base + ".." + commit)
			_, err := io.WriteString(w, "diff --git a/parse.go b/parse.go\n")
			return false, err
		}})
	if r := loadReview(t, w.url, "parser-fix"); r.Head != "u1" {
		t.Fatalf("before any runner commit the load shows %q, want the user's HEAD u1", r.Head)
	}
	w.approveAll("parser-fix")
	a := w.start("parser-fix")
	w.settle(a, dadapter.Settlement{ExitCode: 0, Output: []byte(`{"summary":"done"}`)})
	var last ReviewReply
	defer func() {
		if t.Failed() {
			b, _ := json.MarshalIndent(last, "", " ")
			t.Logf("last review: %s", b)
		}
	}()
	waitUntil(t, "the attempt's commit in the ledger", func() bool {
		last = loadReview(t, w.url, "parser-fix")
		return len(last.History) == 2
	})
	userHead.Store("u0") // the user's older HEAD
	before := asked.Load()
	r := loadReview(t, w.url, "parser-fix")
	if r.Head == "u0" || r.Head == "u1" || r.Head == "" {
		t.Fatalf("after a runner commit the load shows %q, want the recorded runner commit", r.Head)
	}
	if asked.Load() != before {
		t.Errorf("the load asked for the user's HEAD after a runner commit")
	}
	if n := len(r.History); n != 2 {
		t.Errorf("history has %d entries, want 2 (u1 observed, the attempt's commit): %+v", n, r.History)
	}
	resp, err := http.Get(w.url + "/api/diff?task=parser-fix&attempt=" + a)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "diff --git a/parse.go b/parse.go\n" {
		t.Fatalf("diff view: %d %q", resp.StatusCode, body)
	}
	if got, want := diffArgs.Load(), "u1.."+r.Head; got != want {
		t.Errorf("the commit diff was read as %v, want %s (storage base .. commit)", got, want)
	}
}

func loadReview(t *testing.T, url, task string) ReviewReply {
	t.Helper()
	resp, err := http.Get(url + "/api/review?task=" + task)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r ReviewReply
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /api/review: %d %s", resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReviewLoadRacingARunnerCommit: a load reads the user's HEAD outside
// any transaction, so a runner commit can land between that read and the
// load's write of the observation. The write checks again: the
// observation is dropped and the load shows the recorded runner commit,
// so the user's older HEAD never rolls the task back. The head callback
// makes the interleaving: the attempt settles and its commit is recorded
// while the load holds the HEAD it read.
//
// kills: mutant/review-load-observes-after-runner-commit
func TestReviewLoadRacingARunnerCommit(t *testing.T) {
	var w *uiWorld
	var attempt string
	var race atomic.Bool
	w = newUIWorld(t, worldOptions{tasks: []uiTask{parserFix},
		head: func(Task) (string, error) {
			if race.CompareAndSwap(true, false) {
				w.settle(attempt, dadapter.Settlement{ExitCode: 0, Output: []byte(`{"summary":"done"}`)})
				waitUntil(t, "the attempt's commit in the Store", func() bool {
					var owned bool
					if err := w.store.View(func(tx *store.Tx) (err error) {
						owned, err = runnerOwned(tx, w.tasks["parser-fix"].Key())
						return err
					}); err != nil {
						t.Error(err)
						return true
					}
					return owned
				})
			}
			return "u1", nil
		}})
	if r := loadReview(t, w.url, "parser-fix"); r.Head != "u1" {
		t.Fatalf("before any runner commit the load shows %q, want the user's HEAD u1", r.Head)
	}
	w.approveAll("parser-fix")
	attempt = w.start("parser-fix")
	race.Store(true)
	r := loadReview(t, w.url, "parser-fix")
	if race.Load() {
		t.Fatal("the load did not read the user's HEAD")
	}
	if r.Head == "u1" || r.Head == "" {
		t.Errorf("the load that raced the runner commit shows %q, want the recorded runner commit", r.Head)
	}
	if n := len(r.History); n != 2 || r.History[1].AttemptID != attempt {
		t.Errorf("history %+v, want u1 observed, then the attempt's commit (no observation after it)", r.History)
	}
}
