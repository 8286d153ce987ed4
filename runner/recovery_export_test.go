package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// hangingExportD is goD whose recovery hands back one attempt's task
// storage, whose export of it never answers, and which notes whether that
// export's signal was aborted by the time the storage's removal is asked
// for.
type hangingExportD struct {
	*goD
	owner dadapter.StorageOwner

	mu              sync.Mutex
	export          context.Context
	removed         bool
	removedUnderRun bool // the removal was asked for while the export still ran
}

func (d *hangingExportD) RecoverLeftovers(_ context.Context, _ string, done func(dadapter.RecoveryReport, error)) {
	go done(dadapter.RecoveryReport{Storage: []dadapter.RecoveredStorage{goFS{o: d.owner}}}, nil)
}

func (d *hangingExportD) ExportTaskDiff(ctx context.Context, _ dadapter.TaskFilesystems, _ int, _ func(dadapter.ExportResult, error)) {
	d.mu.Lock()
	d.export = ctx
	d.mu.Unlock()
}

func (d *hangingExportD) RemoveTaskFilesystems(_ dadapter.TaskFilesystems, done func(error)) {
	d.mu.Lock()
	d.removed = true
	d.removedUnderRun = d.export == nil || d.export.Err() == nil
	d.mu.Unlock()
	go done(nil)
}

// TestRecoveryAbortsAHangingExportBeforeRemovingItsStorage: startup
// recovery exports the partial output of a writable attempt the crash
// interrupted, then removes its task storage (step 4). "Partial output and
// interrupted rebases": "The export has an overall deadline (60 seconds,
// passed to D as an AbortSignal) … On timeout or any export failure, F
// records "Partial output could not be exported: " as the diagnostic and
// continues with the terminal write and removal; shutdown and recovery
// never wait on an export past its deadline." So at the deadline the
// export's signal is aborted first, and only then does recovery go on to
// the finalization and ask D to remove the storage the export reads.
func TestRecoveryAbortsAHangingExportBeforeRemovingItsStorage(t *testing.T) {
	c, st, a := crashWhileRunning(t, &goD{handles: map[string]*goHandle{}}, words.KindExecute)

	d := &hangingExportD{goD: &goD{handles: map[string]*goHandle{}},
		owner: dadapter.StorageOwner{RunnerOwner: c.cfg.Owner, AttemptID: a.ID, AllocationID: a.AllocationID}}
	c.cfg.ExportTimeout = time.Millisecond
	r := restartRecovery(t, c, st, d)
	if r.Err != nil || !r.Opened() {
		t.Fatalf("recovery: error %v, opened %v", r.Err, r.Opened())
	}
	d.mu.Lock()
	removed, underRun := d.removed, d.removedUnderRun
	d.mu.Unlock()
	if !removed {
		t.Fatal("the task storage was not removed")
	}
	if underRun {
		t.Error("the storage's removal was asked for while its export still ran: the export was not aborted first")
	}
	if a, err := st.Attempt(a.ID); err != nil || !strings.Contains(a.Diagnostic, "export deadline passed") || a.DiagnosticRef != "" {
		t.Errorf("finalized row: diagnostic %q, ref %q, %v; want the export deadline, no file", a.Diagnostic, a.DiagnosticRef, err)
	}
}
