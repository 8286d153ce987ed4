package store_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// TestItemOfReportsAFailedRead guards ItemOf's read of the plan's items: when
// that read fails, ItemOf must return the storage error, not "this attempt
// has no item" (ok false, nil error), which its callers would act on as a
// definite answer about an attempt that does work on an item.
//
// Sweep survivor (seed 20261203): store/review.go:Tx.ItemOf:ignore-error:31d5f59c.
func TestItemOfReportsAFailedRead(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	item := 2
	a := store.Attempt{PlanKey: key, Item: &item, Context: store.Context{PlanRevision: 1}}

	itemOf := func() (store.PlanItem, bool, error) {
		var it store.PlanItem
		var ok bool
		err := e.s.View(func(tx *store.Tx) error {
			var err error
			it, ok, err = tx.ItemOf(a)
			return err
		})
		return it, ok, err
	}

	// Unfaulted, the attempt's item is found.
	if it, ok, err := itemOf(); err != nil || !ok || it.Title != "two" {
		t.Fatalf("ItemOf = %+v, %v, %v; want item 2 \"two\", true, nil", it, ok, err)
	}

	if err := e.fp.Enable("store/statement", "1*return"); err != nil {
		t.Fatal(err)
	}
	defer e.fp.Disable("store/statement")
	it, ok, err := itemOf()
	if err == nil || !strings.Contains(err.Error(), "failpoint store/statement") {
		t.Fatalf("ItemOf with its read failed = %+v, %v, %v; want the storage error", it, ok, err)
	}
	if ok {
		t.Errorf("ItemOf with its read failed reported ok")
	}
}
