// Package simd is the simulated D: the D contract (package dadapter) played
// by a script instead of Docker. It is as unkind as the contract allows:
// Settled is withheld until the script settles a handle, preparation can be
// held, failed or refused, exports and removals can fail or hang, and what a
// crashed runner leaves behind (agent containers, labelled task storage,
// preparation process groups) outlives it until recovery acts.
//
// The scenarios drive it through package sim's deterministic world; the
// demo (package demo, for `codeboost serve --demo`) links it on its own, without
// the rest of the simulator. So it may import only dadapter and the standard
// library: not sim, not testscript, not store, not runner, not failpoints.
// Its time source is a plain func (D.Now), its names for the trace a func
// from attempt ID to alias.
//
// A D is not safe for concurrent use: its caller delivers every request and
// every script step from one goroutine (the simulator's loop, or the demo's).
package simd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// Ops are the simulated D's operations a scenario can steer.
const (
	OpStorage = "storage"        // PrepareTaskFilesystems
	OpClone   = "clone"          // CreateTaskClone
	OpStart   = "start"          // Start (synchronous: auto or fail only)
	OpExport  = "export"         // ExportTaskDiff
	OpRemove  = "remove"         // RemoveTaskFilesystems
	OpCommit  = "commit"         // CommitTaskChanges
	OpRecover = "recover"        // RecoverLeftovers
	OpRelease = "release-commit" // ReleaseTaskCommit
	OpInspect = "inspect"        // InspectTaskChanges
	OpTree    = "check-tree"     // CheckTaskTree
)

// Policy says what D does with the next requests of one op.
type Policy struct {
	Mode string // auto (succeed at once), hold (wait for the script), fail
	Msg  string // the error, for fail
}

// D is the simulated D contract. It is as unkind as the contract allows:
// Settled is withheld until the script settles the handle, however long ago
// Cancel was called; D keeps the first stop reason it receives; an aborted
// preparation step keeps running until the script lets it exit; exports and
// removals can fail or hang.
type D struct {
	name     func(id string) string // attempt alias for the trace
	trace    func(string)
	policy   map[string]Policy
	pending  []*op
	handles  map[string]*Handle
	storage  map[string]*fs // by attempt ID: present task storage
	diffs    map[string]string
	changes  map[string]dadapter.ChangeManifest // what the agent left, by attempt ID
	unfit    map[string]string                  // why the task tree is refused, by attempt ID
	commitNo int
	released []string           // attempts whose commit ref F released
	refs     map[string]bool    // attempts with a commit ref in the runner-owned repository
	legacy   []dadapter.Unowned // objects with codeboost labels but no runner label
	groups   map[int]*group     // preparation process groups by PGID
	groupNo  int

	// written is how many bytes the agent's added and changed files hold,
	// by attempt ID, which a commit measures against commitLimit (the
	// Docker D's CommitLimit; 0: dadapter.DefaultCommitLimit).
	written     map[string]int64
	commitLimit int64

	// held is the task storage this runner process allocated and has not
	// removed, by allocation ID: the contract's process-local ownership
	// map, which ProcessDied empties. Recovery refuses to run while it
	// holds storage of the runner.
	held map[string]dadapter.StorageOwner

	// Now stamps a reported group's start time (nil: the zero time).
	Now func() time.Time
}

type op struct {
	owner     *dadapter.StorageOwner // for storage allocations
	kind      string
	attemptID string
	ctx       context.Context
	complete  func(err error)
}

// group is a preparation helper's process group. It is alive while its op
// runs, including after an abort until the script releases the op (a child
// that ignores SIGTERM), and after the runner process died: the helper
// outlives a crashed runner until recovery stops it (step 2b).
type group struct {
	pgid      int
	kind      string
	attemptID string
	identity  string
	alive     bool
}

// spawn starts a preparation op's process group and reports it through
// onGroup at request time, as the real helper does right after the spawn.
// The returned completion wrapper ends the group when the op completes.
func (d *D) spawn(kind, attemptID string, onGroup func(dadapter.ProcessGroup), complete func(error)) func(error) {
	d.groupNo++
	// Above Linux's largest pid_max (2^22), so a real codeboost process
	// recovering a simulated database finds no such group alive.
	g := &group{pgid: 1<<22 + 4000 + d.groupNo, kind: kind, attemptID: attemptID,
		identity: fmt.Sprintf("boot-sim:%d", 900000+d.groupNo), alive: true}
	if d.groups == nil {
		d.groups = map[int]*group{}
	}
	d.groups[g.pgid] = g
	started := time.Time{}
	if d.Now != nil {
		started = d.Now()
	}
	if onGroup != nil {
		onGroup(dadapter.ProcessGroup{PGID: g.pgid, StartedAt: started, Identity: g.identity})
	}
	return func(err error) {
		g.alive = false
		complete(err)
	}
}

// ReuseGroupIDs starts, for every preparation group of the attempt that has
// ended, an unrelated live process group under the same number: the host
// reused the ID, with another identity.
func (d *D) ReuseGroupIDs(attemptID string) int {
	n := 0
	for pgid, g := range d.groups {
		if g.attemptID == attemptID && !g.alive {
			d.groups[pgid] = &group{pgid: pgid, kind: "unrelated", identity: fmt.Sprintf("boot-sim:reused-%d", pgid), alive: true}
			n++
		}
	}
	return n
}

// GroupAlive reports whether a preparation group of the attempt (of kind op,
// or any kind when op is "") is still alive.
func (d *D) GroupAlive(op, attemptID string) bool {
	for _, g := range d.groups {
		if g.attemptID == attemptID && g.alive && (op == "" || g.kind == op) {
			return true
		}
	}
	return false
}

// LiveGroup is a preparation process group that is still alive.
type LiveGroup struct {
	PGID      int
	Op        string // OpStorage or OpClone; "unrelated" for a reused group ID
	AttemptID string // "" for a reused group ID
}

// LiveGroups lists the process groups still alive, by group ID.
func (d *D) LiveGroups() []LiveGroup {
	var out []LiveGroup
	for _, g := range d.groups {
		if g.alive {
			out = append(out, LiveGroup{PGID: g.pgid, Op: g.kind, AttemptID: g.attemptID})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PGID < out[j].PGID })
	return out
}

// ErrIdentity is StopGroup's refusal to signal a group whose saved identity
// does not match the live one.
var ErrIdentity = errors.New("EIDENTITY: cannot prove the saved process group identity, so it was not signalled")

// StopGroup is startup recovery's step 2b against the simulated host: a
// group with no live member is already stopped (nil); a live one whose
// identity differs from the saved one is not signalled (ErrIdentity);
// otherwise it is killed and awaited.
func (d *D) StopGroup(g dadapter.ProcessGroup) error {
	sg := d.groups[g.PGID]
	if sg == nil || !sg.alive {
		return nil
	}
	if g.Identity == "" || g.Identity != sg.identity {
		return fmt.Errorf("%w: group %d has identity %q, saved %q", ErrIdentity, g.PGID, sg.identity, g.Identity)
	}
	sg.alive = false
	d.tracef("group %d of %s stopped", g.PGID, d.name(sg.attemptID))
	return nil
}

type fs struct {
	dadapter.StorageSeal
	owner dadapter.StorageOwner
	base  string
}

// simBase is the commit simulated storage is seeded from when F names none.
const simBase = "base0000"

func (f *fs) Owner() dadapter.StorageOwner { return f.owner }
func (f *fs) MetadataBaseline() string     { return "baseline-" + f.owner.AllocationID[:8] }
func (f *fs) Base() string {
	if f.base == "" {
		return simBase
	}
	return f.base
}

var _ dadapter.D = (*D)(nil)

// NewD returns a D whose ops all succeed at once.
func NewD(name func(string) string, trace func(string)) *D {
	return &D{name: name, trace: trace, policy: map[string]Policy{}, handles: map[string]*Handle{},
		storage: map[string]*fs{}, held: map[string]dadapter.StorageOwner{}, diffs: map[string]string{},
		changes: map[string]dadapter.ChangeManifest{}, refs: map[string]bool{}, unfit: map[string]string{},
		written: map[string]int64{}}
}

// SetPolicy sets how later requests of op behave.
func (d *D) SetPolicy(opName string, p Policy) error {
	switch opName {
	case OpStorage, OpClone, OpExport, OpRemove, OpCommit, OpRecover, OpRelease, OpInspect, OpTree:
	case OpStart:
		if p.Mode == "hold" {
			return errors.New("start is synchronous: it can only succeed or throw")
		}
	default:
		return fmt.Errorf("unknown D op %q", opName)
	}
	switch p.Mode {
	case "auto", "hold", "fail":
	case "refuse":
		if opName != OpStorage && opName != OpClone {
			return errors.New("refuse (fail before spawning) is for the preparation ops, storage and clone")
		}
	default:
		return fmt.Errorf("unknown policy %q (auto, hold, fail, refuse)", p.Mode)
	}
	d.policy[opName] = p
	return nil
}

func (d *D) tracef(format string, args ...any) { d.trace("d: " + fmt.Sprintf(format, args...)) }

// refused is the "refuse" policy of a preparation op: it fails before
// spawning anything (a missing program, a bad argument), so no process
// group is ever reported.
func (d *D) refused(kind, attemptID string) error {
	if p := d.policy[kind]; p.Mode == "refuse" {
		d.tracef("%s %s refused before spawning: %s", kind, d.name(attemptID), p.Msg)
		return errors.New(p.Msg)
	}
	return nil
}

// request runs an op under its policy.
func (d *D) request(kind, attemptID string, ctx context.Context, complete func(error)) {
	p := d.policy[kind]
	o := &op{kind: kind, attemptID: attemptID, ctx: ctx, complete: complete}
	d.tracef("%s %s requested", kind, d.name(attemptID))
	switch p.Mode {
	case "hold":
		d.pending = append(d.pending, o) // an abort does not end it: the script does
	case "fail":
		complete(errors.New(p.Msg))
	default:
		if ctx != nil && ctx.Err() != nil { // the abort came first: the helper stops at once
			d.tracef("%s %s aborted before it ran", kind, d.name(attemptID))
			complete(fmt.Errorf("aborted: %w", ctx.Err()))
			return
		}
		complete(nil)
	}
}

func (d *D) requestOwned(kind string, owner dadapter.StorageOwner, ctx context.Context, complete func(error)) {
	d.request(kind, owner.AttemptID, ctx, complete)
	if n := len(d.pending); n > 0 && d.pending[n-1].kind == kind && d.pending[n-1].attemptID == owner.AttemptID {
		d.pending[n-1].owner = &owner
	}
}

// Held lists the held ops as "kind alias", sorted, marking aborted ones.
func (d *D) Held() []string {
	var out []string
	for _, o := range d.pending {
		s := o.kind + " " + d.name(o.attemptID)
		if o.ctx != nil && o.ctx.Err() != nil {
			s += " (aborted)"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Finish completes a held op: with err == nil it succeeds unless its context
// was aborted, in which case it reports the abort, as a helper that has
// stopped its process group does.
func (d *D) Finish(kind, attemptID string, err error) error {
	return d.finish(kind, attemptID, err, false)
}

// FinishCrossed completes a held op with the answer it had reached before
// its abort arrived: the helper finished first, and its answer was on its
// way to F when F aborted the step, so F receives it after its stop (the
// abort came too late to change it).
func (d *D) FinishCrossed(kind, attemptID string) error {
	return d.finish(kind, attemptID, nil, true)
}

func (d *D) finish(kind, attemptID string, err error, crossed bool) error {
	for i, o := range d.pending {
		if o.kind != kind || o.attemptID != attemptID {
			continue
		}
		d.pending = append(d.pending[:i], d.pending[i+1:]...)
		if err == nil && !crossed && o.ctx != nil && o.ctx.Err() != nil {
			err = errors.New("aborted")
		}
		if err != nil {
			d.tracef("%s %s ends: %v", kind, d.name(attemptID), err)
		} else {
			d.tracef("%s %s ends", kind, d.name(attemptID))
		}
		o.complete(err)
		return nil
	}
	return fmt.Errorf("no held %s for %s (held: %v)", kind, d.name(attemptID), d.Held())
}

// Aborted reports whether the held op's context was cancelled.
func (d *D) Aborted(kind, attemptID string) (bool, error) {
	for _, o := range d.pending {
		if o.kind == kind && o.attemptID == attemptID {
			return o.ctx != nil && o.ctx.Err() != nil, nil
		}
	}
	return false, fmt.Errorf("no held %s for %s", kind, d.name(attemptID))
}

// StoragePresent reports whether the attempt's task storage exists.
func (d *D) StoragePresent(attemptID string) bool { return d.storage[attemptID] != nil }

// RemoveStorageByHand deletes the attempt's task storage behind the
// runner's back (a person ran docker volume rm); it reports whether there
// was any.
func (d *D) RemoveStorageByHand(attemptID string) bool {
	if d.storage[attemptID] == nil {
		return false
	}
	delete(d.storage, attemptID)
	d.tracef("storage of %s removed by hand", d.name(attemptID))
	return true
}

func (d *D) PrepareTaskFilesystems(ctx context.Context, owner dadapter.StorageOwner, src dadapter.Source, onGroup func(dadapter.ProcessGroup), done func(dadapter.TaskFilesystems, error)) {
	if err := d.refused(OpStorage, owner.AttemptID); err != nil {
		done(nil, err)
		return
	}
	if err := d.checkAllocation(owner); err != nil {
		d.tracef("storage %s refused before spawning: %v", d.name(owner.AttemptID), err)
		done(nil, err)
		return
	}
	d.requestOwned(OpStorage, owner, ctx, d.spawn(OpStorage, owner.AttemptID, onGroup, func(err error) {
		if err != nil {
			done(nil, err) // an aborted allocation removes what it made
			return
		}
		f := &fs{owner: owner, base: src.Commit}
		d.storage[owner.AttemptID] = f
		d.held[owner.AllocationID] = owner
		done(f, nil)
	}))
}

// checkAllocation is the "Token in every request" check of an allocation's
// owner: the runner token is 32 lowercase hex and the allocation ID a
// lowercase UUID v4, and the ID names one allocation, so D refuses one that
// present storage (this process's or a crashed one's) or an allocation
// under way already carries.
func (d *D) checkAllocation(owner dadapter.StorageOwner) error {
	if !validToken(owner.RunnerOwner) {
		return fmt.Errorf("simd: runner owner %q is not 32 lowercase hex", owner.RunnerOwner)
	}
	if !validUUID(owner.AllocationID) {
		return fmt.Errorf("simd: allocation ID %q is not a lowercase UUID v4", owner.AllocationID)
	}
	for _, f := range d.storage {
		if f.owner.AllocationID == owner.AllocationID {
			return fmt.Errorf("simd: allocation ID %s is carried by the storage of %s", owner.AllocationID, d.name(f.owner.AttemptID))
		}
	}
	for _, o := range d.pending {
		if o.owner != nil && o.owner.AllocationID == owner.AllocationID {
			return fmt.Errorf("simd: allocation ID %s is held by the allocation of %s", owner.AllocationID, d.name(o.attemptID))
		}
	}
	return nil
}

// validToken reports whether s is a runner owner token: 32 lowercase hex.
func validToken(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validUUID reports whether s is a lowercase UUID v4.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case i == 14:
			if c != '4' {
				return false
			}
		case i == 19:
			if c != '8' && c != '9' && c != 'a' && c != 'b' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f'):
			return false
		}
	}
	return true
}

func (d *D) RemoveTaskFilesystems(t dadapter.TaskFilesystems, done func(error)) {
	id := t.Owner().AttemptID
	d.request(OpRemove, id, nil, func(err error) {
		if err == nil {
			delete(d.storage, id)
			delete(d.held, t.Owner().AllocationID)
		}
		done(err)
	})
}

// SetDiff sets what an export of the attempt's storage returns.
func (d *D) SetDiff(attemptID, diff string) { d.diffs[attemptID] = diff }

func (d *D) ExportTaskDiff(ctx context.Context, t dadapter.TaskFilesystems, maxBytes int, done func(dadapter.ExportResult, error)) {
	id := t.Owner().AttemptID
	d.request(OpExport, id, ctx, func(err error) {
		if err == nil && d.storage[id] == nil {
			err = errors.New("task storage is gone")
		}
		if err != nil {
			done(dadapter.ExportResult{}, err)
			return
		}
		diff := d.diffs[id]
		if diff == "" {
			diff = "diff --git a/file b/file\n+partial work of " + d.name(id) + "\n"
		}
		r := dadapter.ExportResult{Diff: []byte(diff)}
		if len(r.Diff) > maxBytes {
			r.Diff, r.Truncated = r.Diff[:maxBytes], true
		}
		done(r, nil)
	})
}

// RefuseTree makes checking the attempt's task tree refuse it, saying
// why (an operation that does not fit, a tree that is not the head's).
func (d *D) RefuseTree(attemptID, why string) { d.unfit[attemptID] = why }

// CheckTaskTree proves the tree unless the script refused it, or it can
// tell the tree does not fit (fits): the simulated storage holds its base
// as it was seeded, with no gitlinks.
func (d *D) CheckTaskTree(ctx context.Context, t dadapter.TaskFilesystems, head string, ops []dadapter.FileOperation, done func(dadapter.TaskTree, error)) {
	id := t.Owner().AttemptID
	d.request(OpTree, id, ctx, func(err error) {
		switch {
		case err == nil && d.storage[id] == nil:
			err = errors.New("task storage is gone")
		case err == nil && d.unfit[id] != "":
			err = fmt.Errorf("%w: %s", dadapter.ErrTaskTreeRefused, d.unfit[id])
		case err == nil:
			err = fits(t.Base(), head, ops)
		}
		if err != nil {
			done(dadapter.TaskTree{}, err)
			return
		}
		done(dadapter.TaskTree{Head: head}, nil)
	})
}

// simTree is all the simulator knows of a simulated head's tree: the
// seed's two files (the conformance suite's Source holds them too).
var simTree = map[string]bool{"README.md": true, ".gitignore": true}

// fits refuses what the simulator can tell does not fit, as the Docker D
// would: a head that is not the storage's base, an operation that is none,
// and a create of, or a rename onto, a file of simTree. Any other path is
// taken on trust, since the simulated storage holds no tree to look in
// (the demo's plan modifies files simTree does not list).
func fits(base, head string, ops []dadapter.FileOperation) error {
	if head != base {
		return fmt.Errorf("%w: head %q is not the storage's base %q", dadapter.ErrTaskTreeRefused, head, base)
	}
	for i, op := range ops {
		var why string
		switch op.Op {
		case "create":
			if simTree[op.Path] {
				why = fmt.Sprintf("%q already exists in the head", op.Path)
			}
		case "rename":
			if simTree[op.To] {
				why = fmt.Sprintf("%q already exists in the head", op.To)
			}
		case "modify", "delete":
		default:
			why = fmt.Sprintf("%q is not an operation", op.Op)
		}
		if why != "" {
			return fmt.Errorf("%w: operation %d, a %s: %s", dadapter.ErrTaskTreeRefused, i+1, op.Op, why)
		}
	}
	return nil
}

// SetChanges makes m what inspecting the attempt's task storage finds:
// the script plays what the agent left. Unset, the agent left nothing
// the audit minds (an empty manifest).
func (d *D) SetChanges(attemptID string, m dadapter.ChangeManifest) { d.changes[attemptID] = m }

// SetWritten says how many bytes the attempt's added and changed files
// hold: a commit over the commit limit is refused, as the Docker D refuses
// one (dadapter.CommitTooLarge). Unset, the agent wrote little.
func (d *D) SetWritten(attemptID string, n int64) { d.written[attemptID] = n }

// SetCommitLimit sets the commit limit (0: dadapter.DefaultCommitLimit).
func (d *D) SetCommitLimit(n int64) { d.commitLimit = n }

// InspectTaskChanges answers the manifest the script set.
func (d *D) InspectTaskChanges(ctx context.Context, t dadapter.TaskFilesystems, done func(dadapter.ChangeManifest, error)) {
	id := t.Owner().AttemptID
	d.request(OpInspect, id, ctx, func(err error) {
		if err == nil && d.storage[id] == nil {
			err = errors.New("task storage is gone")
		}
		if err != nil {
			done(dadapter.ChangeManifest{}, err)
			return
		}
		done(d.changes[id], nil)
	})
}

func (d *D) CommitTaskChanges(ctx context.Context, t dadapter.TaskFilesystems, done func(dadapter.Bundle, error)) {
	id := t.Owner().AttemptID
	d.request(OpCommit, id, ctx, func(err error) {
		if err == nil && d.storage[id] == nil {
			err = errors.New("task storage is gone")
		}
		limit := d.commitLimit
		if limit <= 0 {
			limit = dadapter.DefaultCommitLimit
		}
		if err == nil && d.written[id] > limit {
			err = &dadapter.CommitTooLarge{Bytes: d.written[id], Limit: limit}
		}
		if err != nil {
			done(dadapter.Bundle{}, err)
			return
		}
		d.commitNo++
		d.refs[id] = true
		done(dadapter.Bundle{Commit: fmt.Sprintf("c%07d", d.commitNo), Leaves: commitLeaves(d.changes[id].Changes)}, nil)
	})
}

// commitLeaves is the simulated commit's tree, as far as the simulator
// knows it: simTree with the attempt's scripted changes applied, which is
// what the Docker D's commit of the same work tree would list.
func commitLeaves(changes []dadapter.Change) []string {
	tree := map[string]bool{}
	for p := range simTree {
		tree[p] = true
	}
	for _, c := range changes {
		tree[c.Path] = c.Kind != dadapter.ChangeDeleted
	}
	out := []string{}
	for p, present := range tree {
		if present {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// ReleaseTaskCommit records the release; it is not traced, as the
// scenarios' traces predate it, and the simulated commits live nowhere.
func (d *D) ReleaseTaskCommit(t dadapter.TaskFilesystems, done func(error)) {
	id := t.Owner().AttemptID
	d.request(OpRelease, id, nil, func(err error) {
		if err == nil {
			d.released = append(d.released, id)
			delete(d.refs, id)
		}
		done(err)
	})
}

// Refs lists the attempts whose commit ref is in the runner-owned
// repository: taken by CommitTaskChanges and not released since.
func (d *D) Refs() []string {
	var out []string
	for id := range d.refs {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// ReleasedCommits lists the attempts whose commit refs F released, in order.
func (d *D) ReleasedCommits() []string { return append([]string(nil), d.released...) }

func (d *D) CreateTaskClone(ctx context.Context, parent string, src dadapter.Source, onGroup func(dadapter.ProcessGroup), done func(dadapter.Clone, error)) {
	id := attemptFromDir(parent)
	if err := d.refused(OpClone, id); err != nil {
		done(dadapter.Clone{}, err)
		return
	}
	d.request(OpClone, id, ctx, d.spawn(OpClone, id, onGroup, func(err error) {
		if err != nil {
			done(dadapter.Clone{}, err)
			return
		}
		head := src.Commit
		if head == "" {
			head = simBase
		}
		done(dadapter.Clone{Dir: parent + "/clone", Head: head}, nil)
	}))
}

// RecoverLeftovers acts only on resources labelled with owner: it removes
// the agent containers of that runner's handles and lists its task storage
// (kept whole, one handle per allocation, sorted by attempt ID) and every
// object without a runner label, which it never removes. It refuses to run
// while this process holds task storage of the runner.
func (d *D) RecoverLeftovers(ctx context.Context, owner string, done func(dadapter.RecoveryReport, error)) {
	d.request(OpRecover, "", ctx, func(err error) {
		if err == nil {
			err = d.holds(owner)
		}
		if err != nil {
			done(dadapter.RecoveryReport{}, err)
			return
		}
		var ids []string
		for id, h := range d.handles {
			if h.input.RunnerOwner == owner && !h.removed && h.settled == nil { // a settled one's container is already gone
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		for _, id := range ids {
			d.handles[id].removed = true
			d.tracef("recovery removed the agent container of %s", d.name(id))
		}
		var r dadapter.RecoveryReport
		var storage []string
		for id, f := range d.storage {
			if f.owner.RunnerOwner == owner {
				storage = append(storage, id)
			}
		}
		sort.Strings(storage)
		for _, id := range storage {
			f := d.storage[id]
			r.Storage = append(r.Storage, f)
			d.held[f.owner.AllocationID] = f.owner // a recovery handle is held until removed
		}
		r.Unowned = append(r.Unowned, d.legacy...)
		done(r, nil)
	})
}

// holds refuses recovery of owner while this process holds task storage of
// that runner: the storage it lists would be this process's own.
func (d *D) holds(owner string) error {
	var ids []string
	for _, o := range d.held {
		if o.RunnerOwner == owner {
			ids = append(ids, o.AttemptID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	d.tracef("recovery refused: this process holds the storage of %s", d.name(ids[0]))
	return fmt.Errorf("simd: recovery refused: this process holds task storage of the runner (%s)", d.name(ids[0]))
}

// AddLegacy plants an object from an older build: codeboost labels, no
// runner label.
func (d *D) AddLegacy(kind dadapter.ResourceKind, name string) {
	d.legacy = append(d.legacy, dadapter.Unowned{Kind: kind, Name: name, Reason: dadapter.NoRunnerLabel,
		Remove: dadapter.RemoveCommand(kind, name)})
}

// RemoveLegacy is the user running the printed docker command.
func (d *D) RemoveLegacy(name string) bool {
	for i, u := range d.legacy {
		if u.Name == name {
			d.legacy = append(d.legacy[:i], d.legacy[i+1:]...)
			return true
		}
	}
	return false
}

// AddStorage plants task storage with the given labels, as a crashed
// allocation or another database's runner would leave it, and returns the
// handle that runner's process holds.
func (d *D) AddStorage(owner dadapter.StorageOwner) dadapter.TaskFilesystems {
	f := &fs{owner: owner}
	d.storage[owner.AttemptID] = f
	return f
}

// ProcessDied is the runner process being killed: callbacks into it are
// gone. Agent containers keep running until recovery removes them; a
// storage allocation that was under way leaves its labelled volumes behind;
// the process group of a held preparation op stays alive (its helper
// outlives the runner) until recovery's step 2b stops it.
func (d *D) ProcessDied() {
	clear(d.held) // the process-local ownership map dies with it
	for _, h := range d.handles {
		h.onSettled = nil
		h.orphaned = true
	}
	for _, o := range d.pending {
		if o.kind == OpStorage && o.owner != nil {
			d.storage[o.attemptID] = &fs{owner: *o.owner}
			d.tracef("crash left the storage of %s half-allocated", d.name(o.attemptID))
		}
	}
	d.pending = nil
}

func attemptFromDir(dir string) string {
	for i := len(dir) - 1; i >= 0; i-- {
		if dir[i] == '/' {
			return dir[i+1:]
		}
	}
	return dir
}

// Start returns a handle at once, or an error when it allocated nothing:
// the "fail" policy (a script's invalid input), no storage, storage of
// another runner, a deadline already passed, or an attempt ID another
// unsettled handle still owns. Setup is the script's: a setup
// failure is a handle the script settles with a stop reason.
func (d *D) Start(in dadapter.InvocationInput) (dadapter.Handle, error) {
	if p := d.policy[OpStart]; p.Mode == "fail" {
		d.tracef("start %s throws: %s", d.name(in.AttemptID), p.Msg)
		closeOutput(in.Output)
		return nil, errors.New(p.Msg)
	}
	if in.Storage == nil {
		closeOutput(in.Output)
		return nil, errors.New("simd: an invocation needs task storage")
	}
	// Storage comes from an allocation, which checked its runner's token,
	// so this also refuses a runner owner that is not one.
	if o := in.Storage.Owner(); o.RunnerOwner != in.RunnerOwner {
		closeOutput(in.Output)
		return nil, fmt.Errorf("simd: the task storage of %s belongs to another runner", d.name(o.AttemptID))
	}
	// A zero deadline is none: the demo and the scenarios' foreign agent
	// start without one.
	if !in.Deadline.IsZero() && d.Now != nil && !d.Now().Before(in.Deadline) {
		closeOutput(in.Output)
		return nil, fmt.Errorf("simd: the deadline of %s has passed", d.name(in.AttemptID))
	}
	if h := d.handles[in.AttemptID]; h != nil && h.settled == nil && !h.orphaned {
		closeOutput(in.Output)
		return nil, fmt.Errorf("simd: attempt %s already has a running invocation", d.name(in.AttemptID))
	}
	// A zero tree is no check; one checked for another head than the
	// clone's would mount another tree's gitlinks.
	if in.Tree.Head != "" && in.Tree.Head != in.Clone.Head {
		closeOutput(in.Output)
		return nil, fmt.Errorf("simd: the task tree of %s was checked for head %q, not the clone's %q", d.name(in.AttemptID), in.Tree.Head, in.Clone.Head)
	}
	h := &Handle{d: d, attemptID: in.AttemptID, input: in}
	d.handles[in.AttemptID] = h
	d.tracef("start %s", d.name(in.AttemptID))
	return h, nil
}

// Handle is a simulated invocation. It settles only when the script says so,
// and its live output is what the script emits (Emit).
type Handle struct {
	d          *D
	attemptID  string
	input      dadapter.InvocationInput
	stopReason words.StopReason // D's first stop reason
	cancels    []words.StopReason
	settled    *dadapter.Settlement
	onSettled  func(dadapter.Settlement)
	orphaned   bool   // its runner process died
	removed    bool   // recovery removed its container
	captured   bool   // the output capture has stopped: the sink, if any, is closed
	stderr     []byte // what the agent wrote to its stderr (EmitStderr), for the settlement
}

// closeOutput closes a live output sink D will not write to.
func closeOutput(sink dadapter.OutputSink) {
	if sink != nil {
		sink.Close()
	}
}

// Emit is the agent writing p to its stdout or stderr: D passes it to the
// invocation's live output sink, if it has one, until the capture stops
// (the handle settles). What the agent writes after that, or after its
// runner process died, reaches no one.
func (h *Handle) Emit(p []byte) {
	if h.captured || h.orphaned || h.input.Output == nil {
		return
	}
	h.input.Output.Write(p)
}

// EmitStderr is the agent writing p to its stderr: D passes it on as Emit
// does, and keeps its end for the settlement (Settlement.Stderr).
func (h *Handle) EmitStderr(p []byte) {
	if h.captured || h.orphaned {
		return
	}
	h.stderr = append(h.stderr, p...)
	h.Emit(p)
}

func (h *Handle) OnSettled(fn func(dadapter.Settlement)) {
	h.onSettled = fn
	if h.settled != nil {
		fn(*h.settled)
	}
}

// Cancel records the request; D keeps the first stop reason it received.
func (h *Handle) Cancel(reason words.StopReason) {
	h.cancels = append(h.cancels, reason)
	if h.stopReason == "" && h.settled == nil {
		h.stopReason = reason
	}
	h.d.tracef("cancel %s %s", h.d.name(h.attemptID), reason)
}

// Handle returns the attempt's handle, or nil.
func (d *D) Handle(attemptID string) *Handle { return d.handles[attemptID] }

// HasSettled reports whether the script has settled the handle.
func (h *Handle) HasSettled() bool { return h.settled != nil }

// Cancels lists the reasons Cancel was called with.
func (h *Handle) Cancels() []words.StopReason { return h.cancels }

// Input is what Start received.
func (h *Handle) Input() dadapter.InvocationInput { return h.input }

// StopOnItsOwn makes D stop the invocation for its own reason (timeout,
// output-limit, capture-failure) without settling yet.
func (h *Handle) StopOnItsOwn(reason words.StopReason) {
	if h.stopReason == "" {
		h.stopReason = reason
	}
	h.d.tracef("stops %s on its own: %s (first stop reason %s)", h.d.name(h.attemptID), reason, h.stopReason)
}

// Settle resolves Settled. The stop reason is D's first one; s.StopReason
// is used only when D had none.
func (h *Handle) Settle(s dadapter.Settlement) error {
	if h.settled != nil {
		return fmt.Errorf("%s already settled", h.d.name(h.attemptID))
	}
	if h.stopReason != "" {
		s.StopReason = h.stopReason
	}
	if s.Stderr == nil {
		s.Stderr = h.stderr
	}
	if n := len(s.Stderr) - dadapter.StderrTail; n > 0 {
		s.Stderr = s.Stderr[n:] // D keeps the end only
	}
	h.captured = true // the capture stops before Settled resolves
	closeOutput(h.input.Output)
	h.settled = &s
	h.d.tracef("settled %s stop=%q exit=%d", h.d.name(h.attemptID), s.StopReason, s.ExitCode)
	if h.onSettled != nil {
		h.onSettled(s)
	}
	return nil
}
