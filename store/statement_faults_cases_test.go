package store_test

// The statement-fault sweep's cases for the operations the first list
// (statement_faults_test.go) left out: scope continuations, planning
// requests, questions, merge admission, the approval readers, the other
// owner tokens and the rest of the readers. Each fixture reaches the
// branch of its operation that runs the most statements (a continuation
// with later items run under it, a consume that invalidates other
// requests, a merge click's saved response), because an ignored error in
// a statement the fixture never reaches is never failed. The rule is the
// sweep's: "Only outcomes that applied nothing for a passing reason are
// not recorded, so the UI may resend them: […] and a storage error." (the
// contract's "Feedback-event contract (for lane J)", actionId) — a storage
// error is reported as one and changes nothing.

import (
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// amendedAndApproved is a task paused at item 1's checkpoint whose
// continuation was approved at revision 2: queued, with the continuation
// current, so every reader of the plan run folds the prefix in.
func amendedAndApproved(t *testing.T) (*env, string) {
	t.Helper()
	e, key := amendedWithLaterItem(t, []string{"docs/x.md"}, `[{"op": "modify", "path": "docs/x.md"}]`)
	if err := e.approve(key); err != nil {
		t.Fatalf("approve the continuation: %v", err)
	}
	return e, key
}

// approveContinuation is the operation approve-continuation at key's
// present state and review versions, read now.
func (e *env) approveContinuation(key string) func() error {
	sv, rv := e.task(key).StateVersion, e.plan(key).ReviewVersion
	return e.inTx(func(tx *store.Tx) error { _, err := tx.ApproveContinuation(key, sv, rv); return err })
}

// ask asks a question on item (nil: the plan) of key in its own
// transaction and returns the question's ID.
func (e *env) ask(key string, item *int) string {
	e.t.Helper()
	id := faultIDs.UUID()
	e.update(func(tx *store.Tx) error {
		_, err := tx.AskQuestion(key, id, faultIDs.UUID(), item, "why this file?")
		return err
	})
	return id
}

// mergeClick admits a merge of key (in review, every item approved) as a
// merge click's user action and returns the merge attempt's ID.
func (e *env) mergeClick(key string) string {
	e.t.Helper()
	id := faultIDs.UUID()
	sv, rv := e.task(key).StateVersion, e.plan(key).ReviewVersion
	op := e.userAction(key, "merge", func(tx *store.Tx, actionID string) error {
		_, err := tx.AdmitMerge(store.MergeAdmission{PlanKey: key, ID: id, ActionID: actionID,
			ExpectedStateVersion: sv, ExpectedReviewVersion: rv, Repo: "o/r", Number: 7, HeadSHA: "abc"})
		return err
	})
	if err := op(); err != nil {
		e.t.Fatalf("merge click: %v", err)
	}
	return id
}

// ownerTokenCase is one owner token's sweep: a token stored for another
// file, so that the read finds it and all three settings are written again.
func ownerTokenCase(name string, read func(tx *store.Tx, device, inode uint64, newToken func() string) (string, error)) faultCase {
	return faultCase{name: name, covers: []string{"Tx." + name}, setup: func(e *env) func() error {
		e.update(func(tx *store.Tx) error { _, err := read(tx, 1, 2, nil); return err })
		return e.inTx(func(tx *store.Tx) error {
			_, err := read(tx, 1, 3, func() string { return "fedcba9876543210fedcba9876543210" })
			return err
		})
	}}
}

func moreFaultCases() []faultCase {
	one, two := 1, 2
	return []faultCase{
		// Scope continuations.
		{name: "pause for amendment", covers: []string{"Tx.PauseForAmendment"}, setup: func(e *env) func() error {
			key := e.newTask(words.StatusRunning)
			e.update(func(tx *store.Tx) error { return tx.RecordHistory(key, "", "c0") }) // an earlier ledger entry
			id := e.publishedItem(key, "c1")
			return e.inTx(func(tx *store.Tx) error {
				return tx.PauseForAmendment(id, store.ScopeFinding{Paths: []string{"docs/x.md"}, Leaves: []string{"docs/x.md", "go.mod"}})
			})
		}},
		{name: "approve continuation", covers: []string{"Tx.ApproveContinuation"},
			fixture: func(t *testing.T) (*env, func() error) {
				e, key := amendedWithLaterItem(t, []string{"docs/x.md"}, `[{"op": "modify", "path": "docs/x.md"}]`)
				return e, e.approveContinuation(key)
			}},
		{name: "check approve continuation", covers: []string{"Tx.CheckApproveContinuation"},
			fixture: func(t *testing.T) (*env, func() error) {
				e, key := amendedWithLaterItem(t, []string{"docs/x.md"}, `[{"op": "modify", "path": "docs/x.md"}]`)
				return e, e.inTx(func(tx *store.Tx) error { return tx.CheckApproveContinuation(key) })
			}},
		{name: "approve continuation again after an item it ran", covers: []string{"Tx.ApproveContinuation"},
			fixture: func(t *testing.T) (*env, func() error) {
				// The longest path: the audited head walks the later
				// item's ledger entry, the prefix reads both revisions,
				// and the tree takes the later item's operations.
				e, key, _ := continuedThroughItem2(t)
				return e, e.approveContinuation(key)
			}},
		{name: "checkpoint readers with a current approval", covers: []string{"Tx.LatestCheckpoint", "Tx.Progress"},
			fixture: func(t *testing.T) (*env, func() error) {
				e, key := amendedAndApproved(t)
				return e, e.inView(func(tx *store.Tx) error {
					if _, _, err := tx.LatestCheckpoint(key); err != nil {
						return err
					}
					_, err := tx.Progress(key)
					return err
				})
			}},
		{name: "checkpoint readers with a stale approval", covers: []string{"Tx.LatestCheckpoint", "Tx.Progress"},
			fixture: func(t *testing.T) (*env, func() error) {
				e, key, _ := continuedThroughItem2(t)
				return e, e.inView(func(tx *store.Tx) error { _, err := tx.Progress(key); return err })
			}},
		{name: "resume after a continuation", covers: []string{"Tx.CanResume", "Tx.ResumePlan"},
			fixture: func(t *testing.T) (*env, func() error) {
				e, key := amendedAndApproved(t)
				sv, rv := e.task(key).StateVersion, e.plan(key).ReviewVersion
				return e, e.inTx(func(tx *store.Tx) error {
					if err := tx.CanResume(key); err != nil {
						return err
					}
					_, err := tx.ResumePlan(key, sv, rv)
					return err
				})
			}},
		{name: "resume past a continuation's item", covers: []string{"Tx.ResumePlan"},
			fixture: func(t *testing.T) (*env, func() error) {
				// The ledger holds an entry after the continuation's
				// head, so the reconciliation reads its attempt.
				e, key := amendedAndApproved(t)
				a := e.runItem(key, 2)
				if _, err := e.publish(a.ID, []byte(`{"summary":"done"}`), "c2"); err != nil {
					t.Fatalf("Publish item 2: %v", err)
				}
				sv, rv := e.task(key).StateVersion, e.plan(key).ReviewVersion
				return e, e.inTx(func(tx *store.Tx) error { _, err := tx.ResumePlan(key, sv, rv); return err })
			}},
		{name: "next item after a continuation's item", covers: []string{"Tx.NextPlanItem", "Tx.ApprovedItems", "Tx.StaleApprovals"},
			fixture: func(t *testing.T) (*env, func() error) {
				e, key := amendedAndApproved(t)
				rv := e.plan(key).ReviewVersion
				e.executeItem(key, 2, words.Failed)
				return e, e.inTx(func(tx *store.Tx) error {
					if _, err := tx.ApprovedItems(key); err != nil {
						return err
					}
					if _, err := tx.StaleApprovals(key); err != nil {
						return err
					}
					_, _, err := tx.NextPlanItem(key, rv)
					return err
				})
			}},

		// Planning requests.
		{name: "begin a request bound to a continuation", covers: []string{"Tx.BeginPlanRequest"},
			fixture: func(t *testing.T) (*env, func() error) {
				e, key := amendedAndApproved(t)
				e.ready(key, store.ModeDraft, aDraft) // a ready request does not hold the plan
				p, id := e.plan(key), requestIDs.UUID()
				return e, e.inTx(func(tx *store.Tx) error {
					_, err := tx.BeginPlanRequest(key, store.ModeSuggestion, id, p.Revision, p.SnapshotID)
					return err
				})
			}},
		{name: "consume a suggestion over other requests", covers: []string{"Tx.ConsumePlanRequest"}, setup: func(e *env) func() error {
			key := e.newTask("")
			r := e.ready(key, store.ModeSuggestion, twoChange)
			e.ready(key, store.ModeDraft, aDraft)
			e.begin(key, store.ModeSuggestion)
			return e.inTx(func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(r.ID, 1); return err })
		}},
		{name: "consume a draft", covers: []string{"Tx.ConsumePlanRequest"}, setup: func(e *env) func() error {
			key := e.newTask("")
			r := e.ready(key, store.ModeDraft, aDraft)
			e.begin(key, store.ModeDraft)
			return e.inTx(func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(r.ID, 1); return err })
		}},
		{name: "complete requests of both modes", covers: []string{"Tx.CompletePlanRequest"}, setup: func(e *env) func() error {
			draft := e.begin(e.newTask(""), store.ModeDraft)
			suggestion := e.begin(e.newTask(""), store.ModeSuggestion)
			return e.inTx(func(tx *store.Tx) error {
				if err := tx.CompletePlanRequest(draft.ID, draft.Revision, draft.SnapshotID, []byte(aDraft)); err != nil {
					return err
				}
				return tx.CompletePlanRequest(suggestion.ID, suggestion.Revision, suggestion.SnapshotID, []byte(addCard))
			})
		}},
		{name: "settle, cancel and fail requests", covers: []string{"Tx.SettlePlanRequest", "Tx.CancelPlanRequest", "Tx.FailLeftoverPlanRequests"},
			setup: func(e *env) func() error {
				stale := e.begin(e.newTask(""), store.ModeSuggestion)
				ready := e.ready(e.newTask(""), store.ModeDraft, aDraft)
				left := e.newTask("")
				e.begin(left, store.ModeDraft)
				e.begin(e.newTask(""), store.ModeSuggestion)
				return e.inTx(func(tx *store.Tx) error {
					if _, err := tx.SettlePlanRequest(stale.ID, stale.Revision, stale.SnapshotID, store.RequestInvalidated, "plan revision 2 replaced 1"); err != nil {
						return err
					}
					if _, err := tx.CancelPlanRequest(ready.ID); err != nil {
						return err
					}
					_, err := tx.FailLeftoverPlanRequests(leftoverReason)
					return err
				})
			}},
		{name: "request readers", covers: []string{"Tx.PlanRequest", "Tx.PlanRequests"}, setup: func(e *env) func() error {
			key := e.newTask("")
			r := e.ready(key, store.ModeDraft, aDraft)
			e.ready(key, store.ModeSuggestion, twoChange)
			e.begin(key, store.ModeSuggestion)
			return e.inView(func(tx *store.Tx) error {
				if _, err := tx.PlanRequest(r.ID); err != nil {
					return err
				}
				_, err := tx.PlanRequests(key)
				return err
			})
		}},

		// Questions.
		{name: "ask a question on an item", covers: []string{"Tx.AskQuestion"}, setup: func(e *env) func() error {
			key := e.inReview()
			id, alloc := faultIDs.UUID(), faultIDs.UUID()
			return e.userAction(key, "ask", func(tx *store.Tx, _ string) error {
				_, err := tx.AskQuestion(key, id, alloc, &two, "why this file?")
				return err
			})
		}},
		{name: "question moves", covers: []string{"Tx.StartQuestion", "Tx.FinishAnswer", "Tx.FailQuestion"}, setup: func(e *env) func() error {
			key := e.newTask("")
			answered, failed := e.ask(key, &one), e.ask(key, nil)
			return e.inTx(func(tx *store.Tx) error {
				if err := tx.StartQuestion(answered); err != nil {
					return err
				}
				if err := tx.FinishAnswer(answered, "because"); err != nil {
					return err
				}
				return tx.FailQuestion(failed, "the agent stopped", true)
			})
		}},
		{name: "fail leftover questions", covers: []string{"Tx.FailLeftoverQuestions"}, setup: func(e *env) func() error {
			key := e.newTask("")
			running := e.ask(key, &one)
			e.ask(e.newTask(""), nil)
			e.update(func(tx *store.Tx) error { return tx.StartQuestion(running) })
			return e.inTx(func(tx *store.Tx) error { _, err := tx.FailLeftoverQuestions("Server stopped"); return err })
		}},
		{name: "question readers", covers: []string{"Tx.Question", "Tx.Questions"}, setup: func(e *env) func() error {
			key := e.newTask("")
			id := e.ask(key, &one)
			e.ask(key, nil)
			return e.inView(func(tx *store.Tx) error {
				if _, err := tx.Question(id); err != nil {
					return err
				}
				_, err := tx.Questions(key)
				return err
			})
		}},

		// Merges.
		{name: "admit a merge after a failed one", covers: []string{"Tx.AdmitMerge"}, setup: func(e *env) func() error {
			key := e.inReview()
			e.approveAll(key)
			earlier := e.beginMerge(key)
			e.update(func(tx *store.Tx) error { return tx.SetMergeState(earlier, store.MergeFailed) })
			id := faultIDs.UUID()
			sv, rv := e.task(key).StateVersion, e.plan(key).ReviewVersion
			return e.userAction(key, "merge", func(tx *store.Tx, actionID string) error {
				_, err := tx.AdmitMerge(store.MergeAdmission{PlanKey: key, ID: id, ActionID: actionID,
					ExpectedStateVersion: sv, ExpectedReviewVersion: rv, Repo: "o/r", Number: 7, HeadSHA: "abc"})
				return err
			})
		}},
		{name: "merge click removed from the queue", covers: []string{"Tx.EndMerge", "Tx.SetMergeState"}, setup: func(e *env) func() error {
			key := e.inReview()
			e.approveAll(key)
			id := e.mergeClick(key)
			e.update(func(tx *store.Tx) error { return tx.SetMergeState(id, store.MergeQueued) })
			return e.inTx(func(tx *store.Tx) error { return tx.EndMerge(id, store.MergeRemoved, "left the merge queue") })
		}},
		{name: "merge click merged", covers: []string{"Tx.FinishMergeMerged"}, setup: func(e *env) func() error {
			key := e.inReview()
			e.approveAll(key)
			id := e.mergeClick(key)
			return e.inTx(func(tx *store.Tx) error { return tx.FinishMergeMerged(id) })
		}},
		{name: "merge readers", covers: []string{"Tx.MergeAttempt", "Tx.LatestMerge", "Tx.ActiveMerges"}, setup: func(e *env) func() error {
			key := e.inReview()
			id := e.beginMerge(key)
			e.beginMerge(e.inReview())
			return e.inView(func(tx *store.Tx) error {
				if _, err := tx.MergeAttempt(id); err != nil {
					return err
				}
				if _, _, err := tx.LatestMerge(key); err != nil {
					return err
				}
				_, err := tx.ActiveMerges()
				return err
			})
		}},

		// Owner tokens.
		ownerTokenCase("AskOwnerToken", (*store.Tx).AskOwnerToken),
		ownerTokenCase("PlanningOwnerToken", (*store.Tx).PlanningOwnerToken),

		// Approvals and the plan run.
		{name: "approve at a review version", covers: []string{"Tx.ApproveReviewed"}, setup: func(e *env) func() error {
			key := e.inReview()
			rv := e.plan(key).ReviewVersion
			return e.inTx(func(tx *store.Tx) error { _, err := tx.ApproveReviewed(key, 2, rv); return err })
		}},
		{name: "approval readers with a stale approval", covers: []string{"Tx.ApprovedItems", "Tx.StaleApprovals"}, setup: func(e *env) func() error {
			key := e.midRun()
			e.update(func(tx *store.Tx) error { return tx.AssignSegment(key, faultIDs.UUID(), "segment-1", two) }) // after the approvals
			return e.inView(func(tx *store.Tx) error {
				if _, err := tx.ApprovedItems(key); err != nil {
					return err
				}
				_, err := tx.StaleApprovals(key)
				return err
			})
		}},
		{name: "finish a plan run", covers: []string{"Tx.FinishPlanRun"}, setup: func(e *env) func() error {
			key := e.midRun()
			e.executeItem(key, 2, words.Completed)
			return e.inTx(func(tx *store.Tx) error { return tx.FinishPlanRun(key) })
		}},
		{name: "requeue claims", covers: []string{"Tx.RequeueClaims"}, setup: func(e *env) func() error {
			keys := []string{e.interrupted(), e.interrupted()}
			e.update(func(tx *store.Tx) error {
				for _, k := range keys {
					if err := tx.ClaimRequeue(k); err != nil {
						return err
					}
				}
				return nil
			})
			return e.inView(func(tx *store.Tx) error { _, err := tx.RequeueClaims(); return err })
		}},

		// Tasks, the plan, transitions.
		{name: "ensure a configured task", covers: []string{"Tx.EnsureTask"}, setup: func(e *env) func() error {
			e.newTask("") // repo/task1/plan, which EnsureTask leaves as it is
			old := store.Identity{RepositoryID: "repo", TaskID: "task1", PlanID: "plan"}
			id := store.Identity{RepositoryID: "repo", TaskID: "configured", PlanID: "plan"}
			return e.inTx(func(tx *store.Tx) error {
				if _, err := tx.EnsureTask(store.NewTask{Identity: old, SnapshotID: "snap-9", Items: []string{"x"}}); err != nil {
					return err
				}
				_, err := tx.EnsureTask(store.NewTask{Identity: id, SnapshotID: "snap-1", Items: []string{"a", "b"}})
				return err
			})
		}},
		{name: "import titles over requests", covers: []string{"Tx.ImportRevision"}, setup: func(e *env) func() error {
			key := e.newTask("")
			e.ready(key, store.ModeDraft, aDraft)
			e.begin(key, store.ModeSuggestion)
			return e.inTx(func(tx *store.Tx) error { _, err := tx.ImportRevision(key, 1, []string{"a", "b", "c"}); return err })
		}},
		{name: "owe a finding with a requeue claimed", covers: []string{"Tx.OweFinding"}, setup: func(e *env) func() error {
			key := e.interrupted()
			e.update(func(tx *store.Tx) error { return tx.ClaimRequeue(key) })
			a := e.task(key).CurrentAttemptID
			return e.inTx(func(tx *store.Tx) error { return tx.OweFinding(key, a, "wrote outside its scope") })
		}},
		{name: "finish after a read", covers: []string{"Tx.FinishRead"}, setup: func(e *env) func() error {
			key := e.newTask("")
			a := e.running(key, words.KindExecute)
			e.update(func(tx *store.Tx) error { return tx.RecordSafetyFinding(a.ID, "wrote outside its scope") })
			a, task := e.attempt(a.ID), e.task(key)
			present, err := e.s.PresentContext(key)
			if err != nil {
				e.t.Fatal(err)
			}
			return e.inTx(func(tx *store.Tx) error {
				return tx.FinishRead(a, task, present, store.Terminal{State: words.Failed, Diagnostic: "boom"})
			})
		}},

		// Readers inside a transaction.
		{name: "row readers", covers: []string{"Tx.Task", "Tx.Attempt", "Tx.Attempts", "Tx.PresentContext", "Tx.TaskAndPresent", "Tx.ItemOf"},
			setup: func(e *env) func() error {
				key := e.midRun()
				a := e.executeItem(key, 2, words.Failed)
				return e.inView(func(tx *store.Tx) error {
					for _, read := range []func() error{
						func() error { _, err := tx.Task(key); return err },
						func() error { _, err := tx.Attempt(a.ID); return err },
						func() error { _, err := tx.Attempts(key); return err },
						func() error { _, err := tx.PresentContext(key); return err },
						func() error { _, _, err := tx.TaskAndPresent(key); return err },
						func() error { _, _, err := tx.ItemOf(a); return err },
					} {
						if err := read(); err != nil {
							return err
						}
					}
					return nil
				})
			}},
		{name: "saved action", covers: []string{"Store.SavedAction"}, setup: func(e *env) func() error {
			key := e.newTask("")
			a := store.Action{PlanKey: key, ActionID: faultIDs.UUID(), Kind: "note", Request: "note"}
			if _, err := e.s.UserAction(a, func(tx *store.Tx) (store.Response, error) {
				_, err := tx.ChangeNote(key, a.ActionID, 1, "a note")
				return store.Response{}, err
			}); err != nil {
				e.t.Fatal(err)
			}
			return func() error { _, _, err := e.s.SavedAction(a); return err }
		}},
	}
}
