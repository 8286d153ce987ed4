// Package runner is the coordinator of the F1 runner contract
// (shared/seeds/000_b82b7ee0438df427.txt): admission, slots, jobs, first
// reasons, preparation and launch, settlement, publication, retry, cancel,
// the whole-task time budget, unresolved markers and diagnostics retention.
//
// One loop owns all of its state (design.md, "The coordinator is one
// goroutine"): every admission, timer, D callback and user action is an event
// run by Loop, one at a time. I/O that takes time (preparation, waiting for
// Settled, exports, removals) runs elsewhere and reports back as an event.
// The runner depends only on injected interfaces: its Store, the D contract
// (package dadapter), a Clock and a Loop. The very code `codeboost serve`
// runs is the code the scenarios drive; there is no scenario-only branch and
// no switch that turns a guard off for a test (scenarios/README.md says how
// the scenarios show that they bite). Failpoints here are only the
// catalogued interleaving hooks; a disabled one costs one nil check.
//
// It may import store, dadapter, words, ids, failpoints and
// github.com/benbjohnson/clock; never sim, testscript or web.
//
// Contract terms and their Go names:
//
//	contract                              Go
//	--------                              --
//	runner coordinator                    Coordinator
//	open → closing                        Coordinator.closing, CloseAdmission, ErrShuttingDown
//	shutdown steps 1, 4, 5 and 5a         CloseAdmission (1), StopJobs (4), Drained (4, 5, 5a)
//	admission (two steps)                 Coordinator.Admit → reserve, store.Tx.Admit
//	slot                                  Coordinator.slotsUsed, Config.Slots
//	in-memory job                         job (its holder.Holder: phase, first reason, marker)
//	unresolved marker                     marker, Status.Unresolved
//	first reason                          holder.Holder.First (job.h), store.Tx.RecordFirstReason
//	stop request (rule 1)                 Coordinator.stop, applyStop → holder.Stop
//	Store.userAction                      store.Store.UserAction
//	afterCommit                           store.Tx.AfterCommit
//	preparation (AbortSignal)             prepareStorage, prepareClone, abortPreparation
//	launch check                          Coordinator.launch (the holder's Start)
//	InvocationHandle.settled              dadapter.Handle.OnSettled
//	handle.cancel(reason)                 dadapter.Handle.Cancel, holder.StopReasonFor
//	live output (issue 8, not contract)   Deps.Output → dadapter.InvocationInput.Output
//	rule 2 (terminal from first reason)   decideTerminal (settlement and recovery step 3)
//	publication steps 1–5                 publishResult, publishNow, store.Tx.Publish
//	terminal write                        writeTerminal, store.Tx.Finish
//	task-storage holder order             package holder (Step); here step, do and the effects: audit,
//	                                      export, terminalWrite, removeHostFiles, release, releaseCommit, freeSlot
//	prepareTaskFilesystems                dadapter.D.PrepareTaskFilesystems
//	removeTaskFilesystems                 dadapter.D.RemoveTaskFilesystems
//	exportTaskDiff / exportPartial        dadapter.D.ExportTaskDiff, exportPartial
//	commitTaskChanges                     dadapter.D.CommitTaskChanges, takeCommit
//	createTaskCloneAsync                  dadapter.D.CreateTaskClone
//	recordHistory                         store.Tx.RecordHistory
//	retry / "run again"                   Coordinator.Retry, RunAgain
//	retryable (server-facing)             Status.Retryable
//	stopRequested                         Status.StopRequested
//	cancel attempt / cancel task          Coordinator.CancelAttempt, CancelTask
//	whole-task time budget                Config.Budget, budgetSpent
//	file-scope audit (step 2)             auditChanges, inspect, publishResult
//	auditFailed (a failed run)            auditsFailedRun, inspect
//	inspectTaskChanges                    dadapter.D.InspectTaskChanges, dadapter.ChangeManifest
//	safety finding                        job.finding, store.Tx.RecordSafetyFinding
//	saveDiagnostic / retention            saveDiagnostic, retention
//	unreleased                            Coordinator.unreleased, store.Terminal.Unreleased
//	start / resume (#91, #107)            Coordinator.Start, Resume, store.Tx.StartPlan, ResumePlan
//	ItemExecutor, ItemExecutor.close()    planRun, continueRun, store.Tx.NextPlanItem; Drained (step 5a)
//	approvals (execution gate)            store.Tx.Approve, approvalGate
//	scope finding, pauseForAmendment      outOfScope, pauseForScope, store.Tx.PauseForAmendment
//	scope continuation (#88)              store.Tx.ApproveContinuation, LatestCheckpoint, Progress
//	checkTaskTree (#81)                   checkTree, dadapter.D.CheckTaskTree, dadapter.TaskTree
//	one event, one synchronous turn       Loop (GoroutineLoop, sim.Loop), Coordinator.post, call, event
//
// Startup and shutdown (the application's order lives in package app):
//
//	contract                              Go
//	--------                              --
//	decision 1: single-runner lock        runner/lock.Acquire, Lock.Release (app.takeLock, releaseLock)
//	runner owner token                    store.Tx.RunnerOwnerToken (app.readOwnerToken), Config.Owner
//	recovery step 2b (leftover groups)    stopLeftoverGroups, Deps.StopGroup, store.Tx.PreparationGroups
//	recovery steps 2c, 2d (D, legacy)     recoverD, dadapter.D.RecoverLeftovers, legacyCommand
//	recovery step 3 (export, finalize)    exportPhase, finalize, recoveredTerminal → decideTerminal
//	recovery step 4 (storage, rebases)    removeRecoveredStorage, abortRebases, store.Tx.AbortRebase
//	recovery step 5 (merged tasks)        store.Tx.ReconcileMerged (in finalize's transaction)
//	recovery step 6 (requeue claim)       claimRequeues, store.Tx.RequeueCandidates, ClaimRequeue; resume claims it by CAS (store.AdmitRequest.ClaimRequeue)
//	staging directories (#51 item 1)      recoverStagingDirs (its own step, before step 4's directories)
//	recovery step 7 (attempt dirs)        recoverAttemptDirs, RecoveryReport.UnownedPreparation (app.releasePreparation)
//	recovery step 8 (open)                endRecovery, RecoveryReport.Opened
//	shutdown steps 1 to 8                 app.closeAdmission … app.releaseLock; here CloseAdmission, StopJobs, Drained
package runner
