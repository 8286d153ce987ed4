package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Startup recovery runs before the coordinator opens, after the caller took
// the single-runner lock, opened the Store and read the owner token (steps 1
// and 2a). Recover runs steps 2b to 8 as a chain of events on the loop, like
// every other piece of the coordinator, so the simulator can hold any D
// operation in it. Its outcome is read with Recovery once RecoveryDone is
// closed: an error means "close the Store, release the lock and exit with
// this message"; otherwise admission is open unless something must first be
// handled by a person (legacy objects, an unowned preparation).

// RecoveryReport is what startup recovery did and what it left for a person.
type RecoveryReport struct {
	Finalized        []string // "<attemptId> <state>", in row order
	Requeue          []string // plan keys handed to I3: every open requeue claim, this recovery's or an earlier one's, sorted
	UnmatchedStorage []string // storage handles matching no row: reported, never exported or removed
	UnknownEntries   []string // entries under the attempts directory left alone
	LegacyCommands   []string // the exact docker commands a person runs
	// UnownedObjects are this runner's objects D left alone because it does
	// not make their kind or their storage parts disagree: "<kind> <name>
	// (<reason>); remove with: <command>". Reported; admission still opens.
	UnownedObjects     []string
	UnownedPreparation []string // "<attemptId> <dir>": waits for --release-preparation
	UnsafeAttempts     []string // stored attempt IDs not safe in a path or label: refused and reported, never used
	Reconciled         []string // step 5: merged tasks whose status or task-closed event was repaired
	AbortedRebases     []string // step 4: "<planKey> <attemptId>" of each rebase marker cleared
	Err                error    // recovery stopped: exit with this
}

// Opened reports whether recovery ended with admission open.
func (r RecoveryReport) Opened() bool {
	return r.Err == nil && len(r.LegacyCommands) == 0 && len(r.UnownedPreparation) == 0
}

// Recover starts startup recovery. It does not wait; see RecoveryDone.
func (c *Coordinator) Recover(ctx context.Context) error {
	return c.call(ctx, func() {
		c.recovering = true
		c.trace("recovery: started")
		c.stopLeftoverGroups(func() { c.recoverD() })
	})
}

// RecoveryDone is closed when startup recovery has ended.
func (c *Coordinator) RecoveryDone() <-chan struct{} { return c.recoveryDone }

// Recovery returns the report of an ended recovery.
func (c *Coordinator) Recovery() RecoveryReport {
	<-c.recoveryDone
	return c.recoveryReport
}

func (c *Coordinator) recoveryFailed(err error) {
	c.recoveryReport.Err = err
	c.trace("recovery: stopped: %v", err)
	c.endRecovery()
}

func (c *Coordinator) endRecovery() {
	c.recovering = false
	r := c.recoveryReport
	if r.Opened() && !c.closing {
		c.open = true
		c.trace("recovery: done; runner open")
	} else if r.Err == nil {
		c.trace("recovery: done; admission stays closed")
	}
	close(c.recoveryDone)
}

// stopLeftoverGroups is step 2b: every saved preparation group still alive
// is stopped after its identity is proven again, and awaited; a group whose
// identity cannot be proven, or that does not settle, stops startup.
func (c *Coordinator) stopLeftoverGroups(next func()) {
	var groups []store.Attempt
	if err := c.deps.Store.View(func(tx *store.Tx) (err error) { groups, err = tx.PreparationGroups(); return err }); err != nil {
		c.recoveryFailed(err)
		return
	}
	var step func(i int)
	step = func(i int) {
		if i == len(groups) {
			next()
			return
		}
		a := groups[i]
		if c.deps.StopGroup == nil {
			c.recoveryFailed(fmt.Errorf("attempt %s has a saved preparation group %d, and this runner cannot prove its identity", a.ID, *a.PreparationPGID))
			return
		}
		g := dadapter.ProcessGroup{PGID: *a.PreparationPGID, Identity: a.PreparationIdentity}
		if a.PreparationStartedAt != nil {
			g.StartedAt = *a.PreparationStartedAt
		}
		var err error
		c.goWork(func() { err = c.deps.StopGroup(context.Background(), g) }, func() {
			if err != nil {
				c.recoveryFailed(fmt.Errorf("preparation group %d of attempt %s: %w", g.PGID, a.ID, err))
				return
			}
			step(i + 1)
		})
	}
	step(0)
}

// recoverD is steps 2c and 2d.
func (c *Coordinator) recoverD() {
	c.trace("recovery: D recovery for runner owner %s: remove its leftover containers and networks, keep and list its task storage", c.cfg.Owner)
	c.deps.D.RecoverLeftovers(context.Background(), c.cfg.Owner, func(r dadapter.RecoveryReport, err error) {
		c.post(func() {
			if err != nil {
				c.recoveryFailed(fmt.Errorf("D's recovery failed: %w", err))
				return
			}
			for _, u := range r.Unowned {
				if u.Reason == dadapter.NoRunnerLabel {
					c.recoveryReport.LegacyCommands = append(c.recoveryReport.LegacyCommands, legacyCommand(u))
				} else {
					c.recoveryReport.UnownedObjects = append(c.recoveryReport.UnownedObjects,
						fmt.Sprintf("%s %s (%s); remove with: %s", u.Kind, u.Name, u.Reason, legacyCommand(u)))
				}
			}
			c.exportPhase(r.Storage)
		})
	})
}

// legacyCommand is D's wording of the command that removes u; an adapter
// that words none gets the generic one, so a person is never left without.
func legacyCommand(u dadapter.Unowned) string {
	if u.Remove != "" {
		return u.Remove
	}
	return dadapter.RemoveCommand(u.Kind, u.Name)
}

// recoveredStorage is one handle with the row it matches.
type recoveredStorage struct {
	fs  dadapter.TaskFilesystems
	row store.Attempt
}

// exportPhase is step 3's first half, outside any transaction: handles are
// used only when their attempt and allocation IDs both match one row; the
// writable attempts that did not complete get their partial output exported
// under the fixed name <attemptId>.diff. It makes no database writes.
func (c *Coordinator) exportPhase(handles []dadapter.RecoveredStorage) {
	var rows []store.Attempt
	if err := c.deps.Store.View(func(tx *store.Tx) (err error) { rows, err = tx.AllAttempts(); return err }); err != nil {
		c.recoveryFailed(err)
		return
	}
	byID := map[string]store.Attempt{}
	for _, a := range rows {
		if ids.ValidUUID(a.ID) {
			byID[a.ID] = a
		} else {
			c.recoveryReport.UnsafeAttempts = append(c.recoveryReport.UnsafeAttempts, boundID(a.ID))
			c.trace("recovery: refused unsafe attempt ID %q", boundID(a.ID))
		}
	}
	var matched []recoveredStorage
	for _, h := range handles {
		o := h.Owner()
		a, ok := byID[o.AttemptID]
		if !ok || a.AllocationID == "" || a.AllocationID != o.AllocationID {
			c.recoveryReport.UnmatchedStorage = append(c.recoveryReport.UnmatchedStorage, boundID(o.AttemptID))
			c.trace("recovery: storage of %s matches no row; reported and kept", boundID(o.AttemptID))
			continue
		}
		matched = append(matched, recoveredStorage{fs: h, row: a})
	}
	exports := map[string]exportResult{}
	hints := c.stopHints(rows, byID)
	var step func(i int)
	step = func(i int) {
		if i == len(matched) {
			c.finalize(byID, rows, matched, exports, hints)
			return
		}
		m := matched[i]
		if !words.Writable(m.row.Kind) || m.row.State == words.Completed {
			step(i + 1)
			return
		}
		if m.row.MetadataBaseline == "" || m.row.StorageBase == "" {
			exports[m.row.ID] = exportResult{diag: words.PartialNoBaseline}
			step(i + 1)
			return
		}
		j := &job{attemptID: m.row.ID, planKey: m.row.PlanKey, storage: m.fs}
		c.exportPartial(j, func(ref, exportErr string) {
			exports[m.row.ID] = exportResult{ref: ref, diag: exportErr}
			step(i + 1)
		})
	}
	step(0)
}

type exportResult struct{ ref, diag string }

// stopHints finds the active rows whose attempt directory holds the file a
// failed first-reason write leaves (stop.go, noteUnsavedStop). Only a
// regular file in a real directory counts; the path is built from IDs that
// passed the UUID check.
func (c *Coordinator) stopHints(rows []store.Attempt, byID map[string]store.Attempt) map[string]bool {
	hints := map[string]bool{}
	for _, a := range rows {
		if _, ok := byID[a.ID]; !ok || (a.State != words.Pending && a.State != words.Running) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(c.attemptDir(a.ID), stopHintName)); err == nil && fi.Mode().IsRegular() {
			hints[a.ID] = true
		}
	}
	return hints
}

// storageNotRecovered is the quoted cause for a writable row whose storage
// D's owner-scoped recovery did not report (removed by hand, or a runner
// without the Docker adapter).
const storageNotRecovered = "D's recovery found no task storage for this attempt"

func boundID(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// finalize is step 3's finalization transaction, with step 6's requeue
// claim in it, then steps 4 to 8.
func (c *Coordinator) finalize(byID map[string]store.Attempt, rows []store.Attempt, matched []recoveredStorage, exports map[string]exportResult, hints map[string]bool) {
	var finalized, requeue, reconciled []string
	err := c.write(func(tx *store.Tx) error {
		finalized, requeue, reconciled = nil, nil, nil
		active, err := tx.ActiveAttempts()
		if err != nil {
			return err
		}
		for _, a := range active {
			if !ids.ValidUUID(a.ID) {
				continue // refused and reported above; never touched
			}
			task, err := tx.Task(a.PlanKey)
			if err != nil {
				return err
			}
			present, err := tx.PresentContext(a.PlanKey)
			if err != nil {
				return err
			}
			term := recoveredTerminal(a, task, present, tx.Now())
			if hints[a.ID] && term.Diagnostic == words.Interrupted {
				term.Diagnostic = joinDiag(term.Diagnostic, words.StopMayHaveBeenAsked)
			}
			if e, ok := exports[a.ID]; ok {
				term.DiagnosticRef = e.ref
				if e.diag != "" {
					term.Diagnostic = joinDiag(term.Diagnostic, e.diag)
				}
			} else if words.Writable(a.Kind) && a.MetadataBaseline != "" {
				// Its storage was allocated, but D's recovery handed back
				// none for it: the partial output is lost, and the row
				// says so instead of ending as if there had been none.
				term.Diagnostic = joinDiag(term.Diagnostic, words.PartialExportFailedBecause(storageNotRecovered))
			}
			if err := tx.FinishRead(a, task, present, term); err != nil {
				return fmt.Errorf("finalizing attempt %s: %w", a.ID, err)
			}
			finalized = append(finalized, a.ID+" "+string(term.State))
		}
		// Step 5 (feedback-event rule 2), in this same transaction: every
		// confirmed merged merge attempt whose task lacks its merged status
		// or task-closed event is repaired, once.
		if reconciled, err = tx.ReconcileMerged(); err != nil {
			return err
		}
		// Step 6: every open, not human-gated task whose latest attempt was
		// stopped by shutdown or interrupted by the crash, claimed in this
		// same transaction. A task with a recorded rebase is listed only
		// after step 4 aborted it (abortRebases).
		requeue, err = c.claimRequeues(tx)
		return err
	})
	if err != nil {
		err = fmt.Errorf("the finalization transaction failed: %w", err)
		c.recoveryFailed(err)
		return
	}
	for _, f := range finalized {
		id, _, _ := strings.Cut(f, " ")
		c.traceAttempt(id, "recovery: finalized %s", f)
	}
	for _, k := range reconciled {
		c.trace("recovery: merged task %s closed by reconciliation", k)
	}
	for _, k := range requeue {
		c.trace("recovery: requeue %s", k)
	}
	c.recoveryReport.Finalized, c.recoveryReport.Requeue = finalized, requeue
	c.recoveryReport.Reconciled = reconciled
	if err := c.abortRebases(); err != nil {
		c.recoveryFailed(err)
		return
	}
	if len(exports) > 0 {
		c.retention()
	}
	c.removeRecoveredStorage(matched, func() {
		if err := c.recoverStagingDirs(byID); err != nil {
			c.recoveryFailed(err)
			return
		}
		c.recoverAttemptDirs(byID)
	})
}

// abortRebases is step 4's "Abort every recorded interrupted rebase (F3)":
// each tasks.rebase_in_progress is cleared by compare-and-swap on its
// attemptId, and in that same transaction a task that step 6 would list is
// only now claimed for I3. No rebase runs yet (F3), so there is no Git
// process to abort; only the marker is settled. A marker that cannot be
// cleared stops startup.
//
// The report's requeue list is then every claim open, read in that same
// transaction: this recovery's, and any an earlier start claimed but never
// handed on because its admission stayed closed (step 7's unknown
// preparation, step 2d's older objects). Listing only new claims would
// strand those: later recoveries look only at unclaimed tasks, so nothing
// but a person's Resume would ever run them.
func (c *Coordinator) abortRebases() error {
	var aborted, requeue, claims []string
	err := c.write(func(tx *store.Tx) error {
		aborted, requeue, claims = nil, nil, nil
		markers, err := tx.RebasesInProgress()
		if err != nil {
			return err
		}
		for _, m := range markers {
			ok, err := tx.AbortRebase(m.PlanKey, m.AttemptID)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("the rebase marker of %s names no attempt and cannot be cleared by compare-and-swap", m.PlanKey)
			}
			aborted = append(aborted, m.PlanKey+" "+m.AttemptID)
		}
		// Step 3's transaction claimed every other candidate, so with no
		// marker cleared this lists nothing.
		if requeue, err = c.claimRequeues(tx); err != nil {
			return err
		}
		claims, err = tx.RequeueClaims()
		return err
	})
	if err != nil {
		return fmt.Errorf("aborting interrupted rebases: %w", err)
	}
	for _, a := range aborted {
		f := strings.Fields(a)
		c.trace("recovery: rebase of %s aborted for %s; marker cleared", f[1], f[0])
	}
	for _, k := range requeue {
		c.trace("recovery: requeue %s", k)
	}
	for _, k := range claims {
		if !slices.Contains(c.recoveryReport.Requeue, k) && !slices.Contains(requeue, k) {
			c.trace("recovery: handing on the requeue an earlier start claimed for %s", k)
		}
	}
	c.recoveryReport.AbortedRebases = aborted
	c.recoveryReport.Requeue = claims
	return nil
}

func joinDiag(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// recoveredTerminal is step 3's finalization of a row whose process died
// before D settled: settlement's first-reason table (decideTerminal) applied
// to what the row saved.
func recoveredTerminal(a store.Attempt, task store.Task, present store.Context, now time.Time) store.Terminal {
	f := terminalFacts{
		firstReason:    a.FirstReason,
		staleCause:     a.StaleCause,
		presentCause:   store.StaleCause(a.Context, present),
		stopReason:     a.StopReason,
		timeoutMinutes: int(a.Deadline.Sub(a.CreatedAt).Minutes()),
		budgetPassed:   task.BudgetDeadline != nil && !now.Before(*task.BudgetDeadline),
		deadlinePassed: !now.Before(a.Deadline),
	}
	d := decideTerminal(f)
	return store.Terminal{State: d.state, FirstReason: d.firstReason, StaleCause: d.staleCause,
		StopReason: a.StopReason, Diagnostic: d.diagnostic}
}

// removeRecoveredStorage is step 4's storage half: every matched handle is
// removed, exported or not; the coordinator does not open until every
// removal succeeded.
func (c *Coordinator) removeRecoveredStorage(matched []recoveredStorage, next func()) {
	var step func(i int)
	step = func(i int) {
		if i == len(matched) {
			next()
			return
		}
		m := matched[i]
		c.deps.D.RemoveTaskFilesystems(m.fs, func(err error) {
			c.post(func() {
				if err != nil {
					c.recoveryFailed(fmt.Errorf("removing the task storage of %s: %w", m.row.ID, err))
					return
				}
				c.traceAttempt(m.row.ID, "recovery: storage removed %s", m.row.ID)
				if !words.Writable(m.row.Kind) || m.row.State == words.Completed {
					step(i + 1)
					return
				}
				c.dropCommit(m.row.ID, m.fs, func() { step(i + 1) })
			})
		})
	}
	step(0)
}

// ownedEntries lists the entries of root (a directory of this runner's,
// under <root>/<owner>) that recovery may remove: directories, not links,
// on root's own device, named by a UUID that known accepts. Every other
// entry is reported in UnknownEntries and left alone, but for those in
// skip, which the caller handles. A missing root has no entries.
func (c *Coordinator) ownedEntries(root string, known func(name string) bool, skip map[string]bool) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var rootDev uint64
	if st, err := os.Lstat(root); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			rootDev = uint64(sys.Dev)
		}
	}
	var owned []string
	for _, e := range entries {
		name := e.Name()
		if skip[name] {
			continue
		}
		info, err := os.Lstat(filepath.Join(root, name))
		sameDev := false
		if err == nil {
			if sys, ok := info.Sys().(*syscall.Stat_t); ok {
				sameDev = uint64(sys.Dev) == rootDev
			}
		}
		if err != nil || !info.IsDir() || info.Mode()&os.ModeSymlink != 0 || !sameDev || !ids.ValidUUID(name) || !known(name) {
			c.recoveryReport.UnknownEntries = append(c.recoveryReport.UnknownEntries, filepath.Join(root, name))
			c.trace("recovery: unknown entry %s left alone", name)
			continue
		}
		owned = append(owned, name)
	}
	return owned, nil
}

// recoverStagingDirs is the staging directories' own removal step. D
// seeds task storage through a clone on the host,
// <root>/<owner>/staging/<allocation ID>, a path with no label to find it
// by: a crash mid-allocation leaves one, and so does a removal D could
// not confirm (a staging-directory entry of Unreleased). D's recovery
// has ended, and this process allocates nothing before admission opens,
// so none is in use: each one named by an allocation of this database's
// attempts is removed, with the attempt directories' path checks, and
// anything else is reported and left alone.
func (c *Coordinator) recoverStagingDirs(byID map[string]store.Attempt) error {
	allocations := map[string]bool{}
	for _, a := range byID {
		if a.AllocationID != "" {
			allocations[a.AllocationID] = true
		}
	}
	root := filepath.Join(c.cfg.Root, c.cfg.Owner, "staging")
	removable, err := c.ownedEntries(root, func(name string) bool { return allocations[name] }, nil)
	if err != nil {
		return err
	}
	for _, name := range removable {
		if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
			return fmt.Errorf("removing staging directory %s: %w", filepath.Join(root, name), err)
		}
		c.trace("recovery: staging directory %s removed", name)
	}
	return nil
}

// recoverAttemptDirs is step 4's directory half and step 7.
func (c *Coordinator) recoverAttemptDirs(byID map[string]store.Attempt) {
	var starting []store.Attempt
	if err := c.deps.Store.View(func(tx *store.Tx) (err error) { starting, err = tx.StartingPreparations(); return err }); err != nil {
		c.recoveryFailed(err)
		return
	}
	held := map[string]bool{}
	for _, a := range starting {
		held[a.ID] = true
	}
	root := filepath.Join(c.cfg.Root, c.cfg.Owner, "attempts")
	removable, err := c.ownedEntries(root, func(name string) bool {
		_, known := byID[name]
		return known
	}, held) // a held one: step 7 keeps it for --release-preparation
	if err != nil {
		c.recoveryFailed(err)
		return
	}
	for _, name := range removable {
		if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
			c.recoveryFailed(fmt.Errorf("removing attempt directory %s: %w", filepath.Join(root, name), err))
			return
		}
		c.traceAttempt(name, "recovery: attempt directory of %s removed", name)
	}
	for _, a := range starting {
		c.recoveryReport.UnownedPreparation = append(c.recoveryReport.UnownedPreparation, a.ID+" "+c.attemptDir(a.ID))
		c.traceAttempt(a.ID, "recovery: preparation of %s started with no group ID; waiting for --release-preparation", a.ID)
	}
	for _, cmd := range c.recoveryReport.LegacyCommands {
		c.trace("recovery: legacy object: %s", cmd)
	}
	c.endRecovery()
}

// claimRequeues is step 6: it lists the tasks to hand to I3 and claims
// requeue_pending for each in the caller's transaction.
func (c *Coordinator) claimRequeues(tx *store.Tx) ([]string, error) {
	keys, err := tx.RequeueCandidates()
	if err != nil {
		return nil, err
	}
	for _, key := range keys {
		if err := tx.ClaimRequeue(key); err != nil {
			return nil, err
		}
	}
	return keys, nil
}
