package store_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
)

// TestFindingIDsAndIdentitiesAreChecked: a finding ID becomes an event's
// sourceRef and a plan identity's parts become the plan key that scopes
// every row, so each is checked before anything is written. A finding ID is
// 1 to store.MaxReviewKey characters of UTF-8; an identity part is a safe ID
// (no "/", which would let two identities share one plan key, and never "."
// or ".."). Every refusal is bad-input and leaves the database unchanged.
//
// kills: mutant/finding-id-unchecked mutant/create-task-skips-identity-check
func TestFindingIDsAndIdentitiesAreChecked(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	action := faultIDs.UUID()
	for _, id := range []string{"", strings.Repeat("f", store.MaxReviewKey+1), "f\xff"} {
		before := e.dump()
		wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.AddFinding(key, id, "a problem") }), store.CodeBadInput)
		wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.AcceptFinding(key, action, id) }), store.CodeBadInput)
		if diff := cmp.Diff(before, e.dump()); diff != "" {
			t.Errorf("finding ID %q: a refusal changed the database:\n%s", id, diff)
		}
	}
	long := strings.Repeat("é", store.MaxReviewKey) // counted in characters
	e.update(func(tx *store.Tx) error { return tx.AddFinding(key, long, "a problem") })
	e.update(func(tx *store.Tx) error { return tx.AcceptFinding(key, action, long) })

	for _, id := range []store.Identity{
		{RepositoryID: "repo/x", TaskID: "task", PlanID: "plan"},
		{RepositoryID: "repo", TaskID: "..", PlanID: "plan"},
		{RepositoryID: "repo", TaskID: "task", PlanID: ""},
		{RepositoryID: "repo", TaskID: "task", PlanID: "plan one"},
	} {
		before := e.dump()
		err := e.s.Update(func(tx *store.Tx) error {
			return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "snap", Items: []string{"one"}})
		})
		wantRefusal(t, err, store.CodeBadInput)
		if diff := cmp.Diff(before, e.dump()); diff != "" {
			t.Errorf("identity %+v: a refusal changed the database:\n%s", id, diff)
		}
	}
}
