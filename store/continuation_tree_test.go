package store_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// treeModel is a reference model of approve-continuation's "validates the
// remaining plan against that head's tree": the checkpoint's leaves, with
// the declared operations of the items the continuation already ran
// applied as they are, then each remaining item's operations in order,
// each seeing the ones before it: "a create or a rename's target must not
// exist, a modify, a delete or a rename's source must".
func treeModel(leaves []string, ran, rest [][]plan.FileOp, firstRest int) (refusal string) {
	tree := map[string]bool{}
	for _, l := range leaves {
		tree[l] = true
	}
	apply := func(item int, ops []plan.FileOp, check bool) string {
		for _, op := range ops {
			why := ""
			switch op.Op {
			case plan.OpCreate:
				if tree[op.Path] {
					why = "it exists"
				}
				tree[op.Path] = true
			case plan.OpModify, plan.OpDelete:
				if !tree[op.Path] {
					why = "it does not exist"
				}
				if op.Op == plan.OpDelete {
					delete(tree, op.Path)
				}
			case plan.OpRename:
				if !tree[op.Path] {
					why = "it does not exist"
				} else if tree[op.To] {
					why = op.To + " exists"
				}
				delete(tree, op.Path)
				tree[op.To] = true
			}
			if check && why != "" {
				return fmt.Sprintf("item %d's %s of %s does not fit the checkpoint's tree: %s", item, op.Op, op.Path, why)
			}
		}
		return ""
	}
	for _, ops := range ran {
		apply(0, ops, false)
	}
	for i, ops := range rest {
		if r := apply(firstRest+i, ops, true); r != "" {
			return r
		}
	}
	return ""
}

var treePaths = []string{"docs/x.md", "src/a.go", "src/b.go", "src/c.go"}

// randomOps declares up to two operations of one item, each on paths
// no other operation of the item names ("one operation per path").
func randomOps(rng *rand.Rand) []plan.FileOp {
	free := slices.Clone(treePaths)
	rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	var ops []plan.FileOp
	for range rng.IntN(3) {
		op := plan.FileOp{Op: []string{plan.OpCreate, plan.OpModify, plan.OpDelete, plan.OpRename}[rng.IntN(4)], Path: free[0]}
		free = free[1:]
		if op.Op == plan.OpRename {
			op.To, free = free[0], free[1:]
		}
		ops = append(ops, op)
	}
	return ops
}

// itemJSON is a plan item titled title that declares ops (and scope).
func itemJSON(t *testing.T, title string, ops []plan.FileOp, scope ...string) string {
	t.Helper()
	b, err := json.Marshal(plan.Item{Title: title, Files: ops, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApproveContinuationFitsTheTreeAgainstAModel pauses tasks at item 1
// in generated trees, amends them with generated file operations in the
// later items, and compares approve-continuation's answer with treeModel:
// first the approval itself, then (when it admitted and item 2 ran) the
// renewed approval of a further revision, where item 2's operations are
// part of the tree the remaining items must fit. The seed is fixed.
func TestApproveContinuationFitsTheTreeAgainstAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(88, 14))
	owning := `{"title": "one", "scope": ["docs/x.md"]}`
	for run := 0; run < 60; run++ {
		e := newEnv(t)
		key := e.newTask(words.StatusRunning)
		var leaves []string
		for _, p := range treePaths {
			if rng.IntN(2) == 0 {
				leaves = append(leaves, p)
			}
		}
		a := e.commitItem(key, 1, "c1")
		e.update(func(tx *store.Tx) error {
			return tx.PauseForAmendment(a.ID, store.ScopeFinding{Paths: []string{"docs/x.md"}, Leaves: leaves})
		})
		later := make([][]plan.FileOp, 1+rng.IntN(3))
		items := []string{owning}
		for i := range later {
			later[i] = randomOps(rng)
			items = append(items, itemJSON(t, fmt.Sprintf("item %d", i+2), later[i]))
		}
		e.importRevision(key, 1, planDoc(items...))
		where := fmt.Sprintf("run %d: leaves %v, items 2… %v", run, leaves, later)
		want := treeModel(leaves, nil, later, 2)
		checkFit(t, e, key, where, want)
		if want != "" {
			continue
		}
		// Item 2 runs under the approved continuation; a further revision
		// keeps items 1 and 2 and declares new later items.
		e.commitItem(key, 2, "c2")
		more := make([][]plan.FileOp, 1+rng.IntN(2))
		items = items[:2]
		for i := range more {
			more[i] = randomOps(rng)
			items = append(items, itemJSON(t, fmt.Sprintf("item %d, revised", i+3), more[i]))
		}
		e.importRevision(key, 2, planDoc(items...))
		where += fmt.Sprintf(", then items 3… %v", more)
		checkFit(t, e, key, where, treeModel(leaves, later[:1], more, 3))
	}
}

// checkFit approves key's continuation and checks the answer is want's
// refusal (writing nothing) or, when want is "", an approval.
func checkFit(t *testing.T, e *env, key, where, want string) {
	t.Helper()
	before := e.continuationWrites(key)
	_, err := e.approveAt(key, before.StateVersion, before.Review)
	if want == "" {
		if err != nil {
			t.Fatalf("%s: %v, want it approved", where, err)
		}
		return
	}
	r, ok := store.IsRefusal(err)
	if !ok || r.Code != store.CodeIllegal || !strings.Contains(r.Message, want) {
		t.Fatalf("%s: %v, want the refusal %q", where, err, want)
	}
	if after := e.continuationWrites(key); after != before {
		t.Fatalf("%s: the refusal wrote: %+v, was %+v", where, after, before)
	}
}
