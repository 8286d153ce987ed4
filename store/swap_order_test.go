package store_test

import (
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// This file holds the tests of the order of two steps that the swap-steps
// mutants of the Store showed no test checked. The two below are for the
// race detector (make race, and the mutation sweep's race pass): the
// statement cache's maps are shared by every goroutine that reads or
// writes through the Store (the runner's loop, HTTP handlers' status
// reads), and stmtMu guards them; a write moved past its Unlock is reported
// here, where goroutines really meet on the cache.

// TestConcurrentReadsShareTheStatementCache: several goroutines read
// through one Store at once. Each transaction ends in prepareSeen, which
// lists the statements the transaction met for the first time and clears
// that set, under stmtMu, then prepares them without it; stmt, in the
// next goroutine's transaction, adds to the same set under stmtMu. The
// set is cleared before the lock is let go: cleared after, the clear
// would race with the other goroutines' reads and writes of the set.
//
// Kills the sweep's store/open.go:Store.prepareSeen:swap-steps:45a1f785 (in the race pass).
func TestConcurrentReadsShareTheStatementCache(t *testing.T) {
	e := newEnv(t)
	var keys []string
	for range 4 {
		keys = append(keys, e.newTask(""))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				key := keys[(g+i)%len(keys)]
				if _, err := e.s.Task(key); err != nil {
					t.Error(err)
					return
				}
				if _, err := e.s.Attempts(key); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestCloseWhileATransactionRuns: Close may be called while another
// goroutine is inside a transaction (a status read racing shutdown); that
// transaction's statements fail from then on ("Calls after Close fail")
// but must not race with Close on the statement cache. Close empties the
// cache under stmtMu; emptied after the Unlock, the nil write would race
// with the other goroutine's cache lookups, which take stmtMu.
//
// Kills the sweep's store/open.go:Store.Close:swap-steps:b2463a74 (in the race pass).
func TestCloseWhileATransactionRuns(t *testing.T) {
	// Each round's meeting is left to the scheduler; several rounds make
	// it very likely that one lookup lands between Close's Unlock and the
	// moment the reader learns of the close.
	for range 10 {
		closeWhileATransactionRuns(t)
	}
}

func closeWhileATransactionRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "codeboost.db")
	s, err := store.Open(path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
	if err != nil {
		t.Fatal(err)
	}
	id := store.Identity{RepositoryID: "repo", TaskID: "task", PlanID: "plan"}
	if err := s.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "snap-1", Items: []string{"one"}})
	}); err != nil {
		t.Fatal(err)
	}
	key := id.Key()
	var reads atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.View(func(tx *store.Tx) error {
			failed := 0
			for failed < 50 {
				if _, err := tx.Task(key); err != nil {
					failed++
				}
				reads.Add(1)
			}
			return nil
		})
	}()
	for reads.Load() < 20 {
		runtime.Gosched()
	}
	s.Close()
	<-done
}

// TestSavedActionSaysItIsAReplay: SavedAction answers a recorded action
// from its saved response, for a caller that must answer a replay without
// its outside read (a merge click's GitHub read); that answer is a replay
// and says so (Response.Replayed: "true when this is a saved response"),
// as UserAction's replay does, so that the HTTP reply carries
// "replayed": true. Replayed is set from what the read found, after the
// read; set before it, it would always be false.
//
// Kills the sweep's store/useractions.go:Store.SavedAction:swap-steps:b97c04d7.
func TestSavedActionSaysItIsAReplay(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	act := store.Action{PlanKey: key, ActionID: actionA, Kind: "note", Request: "x"}
	if _, ok, err := e.s.SavedAction(act); err != nil || ok {
		t.Fatalf("before the action: ok %v, %v; want nothing saved", ok, err)
	}
	if _, err := e.s.UserAction(act, func(tx *store.Tx) (store.Response, error) {
		return store.Response{Outcome: "applied", Message: "noted"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	resp, ok, err := e.s.SavedAction(act)
	if err != nil || !ok || !resp.Replayed || resp.Outcome != "applied" || resp.Message != "noted" {
		t.Errorf("SavedAction: %+v, ok %v, %v; want the saved response, marked replayed", resp, ok, err)
	}
}

// TestMergeOutcomeResponseIsBounded: "When the merge coordinator records
// the outcome, the same transaction updates that saved response", and a
// saved response's message is bounded like every durable reason
// (Response.Message: "bounded"; store.MaxDiagnostic). EndMerge passes the
// code host's reason as it came; updateSavedResponse bounds it before it
// encodes the response. Bounded after the encoding, the bound would reach
// only the discarded copy, and a replay of the merge click would answer
// the whole unbounded reason.
//
// Kills the sweep's store/useractions.go:Tx.updateSavedResponse:swap-steps:8f270569.
func TestMergeOutcomeResponseIsBounded(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	e.approveAll(key)
	task := e.task(key)
	act := store.Action{PlanKey: key, ActionID: actionA, Kind: "merge", Request: "x"}
	mergeID := ids.Random{}.UUID()
	if _, err := e.s.UserAction(act, func(tx *store.Tx) (store.Response, error) {
		p, err := tx.Plan(key)
		if err != nil {
			return store.Response{}, err
		}
		if _, err := tx.AdmitMerge(store.MergeAdmission{PlanKey: key, ID: mergeID, ActionID: actionA,
			ExpectedStateVersion: task.StateVersion, ExpectedReviewVersion: p.ReviewVersion, Repo: "o/r", Number: 1, HeadSHA: "abc"}); err != nil {
			return store.Response{}, err
		}
		return store.Response{Outcome: "in progress", AttemptID: mergeID}, nil
	}); err != nil {
		t.Fatal(err)
	}
	reason := strings.Repeat("r", store.MaxDiagnostic+500)
	e.update(func(tx *store.Tx) error { return tx.EndMerge(mergeID, store.MergeFailed, reason) })
	resp, ok, err := e.s.SavedAction(act)
	if err != nil || !ok || resp.Outcome != store.MergeFailed {
		t.Fatalf("SavedAction: %+v, ok %v, %v; want the merge's outcome", resp, ok, err)
	}
	if len(resp.Message) > store.MaxDiagnostic || !strings.HasSuffix(resp.Message, "…") {
		t.Errorf("the saved merge outcome's message is %d bytes (ends %q); want it cut at %d", len(resp.Message),
			resp.Message[max(0, len(resp.Message)-8):], store.MaxDiagnostic)
	}
}

// TestSavedResponseMessageIsBounded: a user action's saved response keeps
// a bounded message (Response.Message: "bounded"; store.MaxDiagnostic), so
// a replay answers the cut message. saveAction bounds the message before
// it encodes the response; bounded after, the saved JSON (well under
// MaxResponse here) would keep the whole message.
//
// Kills the sweep's store/useractions.go:Tx.saveAction:swap-steps:8f270569.
func TestSavedResponseMessageIsBounded(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	act := store.Action{PlanKey: key, ActionID: actionA, Kind: "note", Request: "x"}
	long := strings.Repeat("m", store.MaxDiagnostic+500)
	if _, err := e.s.UserAction(act, func(tx *store.Tx) (store.Response, error) {
		return store.Response{Outcome: "applied", Message: long}, nil
	}); err != nil {
		t.Fatal(err)
	}
	again, err := e.s.UserAction(act, func(tx *store.Tx) (store.Response, error) {
		t.Fatal("a replay ran the action again")
		return store.Response{}, nil
	})
	if err != nil || !again.Replayed {
		t.Fatalf("replay: %+v, %v", again, err)
	}
	if len(again.Message) > store.MaxDiagnostic || !strings.HasSuffix(again.Message, "…") {
		t.Errorf("the replayed message is %d bytes; want it cut at %d", len(again.Message), store.MaxDiagnostic)
	}
}
