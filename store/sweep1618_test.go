package store_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// Tests for the survivors of the seed-1618 sweep in store/.

// TestPresentContextOfNoTaskIsNotFound: the present context of a plan key
// no task has is the refusal not-found, naming the key, as every other
// read of a task answers; it is never the driver's bare "no rows", which
// a caller would report as a storage failure (500) rather than as a task
// that is not there.
// Kills the sweep's store/rows.go:Tx.PresentContext:drop-guard:b33fafe9.
func TestPresentContextOfNoTaskIsNotFound(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	err := e.s.View(func(tx *store.Tx) error {
		if _, err := tx.PresentContext(key); err != nil {
			t.Errorf("the present context of a task: %v", err)
		}
		_, err := tx.PresentContext("repo/nobody/plan")
		return err
	})
	if code := store.RefusalCode(err); code != store.CodeNotFound {
		t.Fatalf("the present context of no task: %v (code %q), want the refusal %s", err, code, store.CodeNotFound)
	}
}

// TestConsumeRefusesACorruptStoredSuggestion: a ready suggestion's reply was
// checked when it was stored (CompletePlanRequest), and is read again when
// it is applied: a reply that no longer parses (another writer, a damaged
// file) is refused as bad input, naming the request and what is wrong with
// its cards (not as cards that cannot be applied), and changes nothing:
// the plan keeps its revision and the request stays ready.
// Kills the sweep's store/requests.go:Tx.ConsumePlanRequest:ignore-error:31d5f59c~6.
func TestConsumeRefusesACorruptStoredSuggestion(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	r := e.ready(key, store.ModeSuggestion, twoChange)
	e.rawExec(`UPDATE plan_requests SET reply = '[{"item": 2, "kind": "rewrite"}]' WHERE id = ?`, r.ID)
	err := e.s.Update(func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(r.ID, 1); return err })
	want := "planning request " + r.ID + "'s cards: card 1: kind is \"rewrite\""
	if code := store.RefusalCode(err); code != store.CodeBadInput || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("applying a corrupt suggestion: %v (code %q), want the refusal %s saying %q", err, code, store.CodeBadInput, want)
	}
	if rev := e.plan(key).Revision; rev != 1 {
		t.Errorf("the plan is at revision %d after the refusal, want 1", rev)
	}
}
