package store

// Planning requests: the suggestion (E3) coordinator's durable half, the
// plan_requests table. The coordinator contract
// (shared/seeds/002_…) puts every durable rule here: "The existing Store
// remains the only durable writer and the only Apply authority", and
// "Store provides the transactional request CAS across independent
// processes". A request's life is
//
//	pending → ready → consumed, or pending → failed | cancelled | invalidated
//
// with one more edge, the user's dismissal of a ready request (ready →
// cancelled), and with the invalidation of ready requests: "plan or
// snapshot changes invalidate pending/ready while retaining completed
// history". Suggestions and drafts (#124) share the table and the
// lifecycle and are told apart by mode.
//
// A request is the plan's, not the task's: none of these writes moves the
// task's state version, so a planning request finishing never turns a
// user's pending task action into a stale-version refusal. Only
// ConsumePlanRequest changes what an attempt depends on (it imports a
// revision), and it does so through ImportPlan, which bumps the context.

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/strictjson"
	"github.com/codeboost/codeboost/words"
)

// Planning request modes (the contract's v11: "A draft and a suggestion
// are both rows of requests, told apart by mode").
const (
	ModeSuggestion = "suggestion"
	ModeDraft      = "draft"
)

// Planning request states (the contract's "Suggestions (E3, requests)"
// row: pending, ready, consumed, failed, cancelled, invalidated).
const (
	RequestPending     = "pending"
	RequestReady       = "ready"
	RequestConsumed    = "consumed"
	RequestFailed      = "failed"
	RequestCancelled   = "cancelled"
	RequestInvalidated = "invalidated"
)

// Limits of a planning reply. MaxPlanReply is the 1 MiB every stored
// result is held to ("It is limited to 1 MiB, the same as the plan-document
// limit after extraction"); the card limits keep one card readable on the
// review screen.
const (
	MaxPlanReply        = 1 << 20       // bytes of a stored reply
	MaxCards            = plan.MaxItems // cards of one suggestion reply
	MaxCardTitle        = plan.MaxTitle // characters of a card's or a draft item's title
	MaxCardInstructions = 8 << 10       // bytes of a card's or a draft item's instructions
)

// Card kinds: what a suggestion card does to the plan when it is applied.
const (
	CardAdd    = "add"    // a new item, appended after the existing ones; Item is 0
	CardChange = "change" // item Item gets the card's title and instructions
	CardRemove = "remove" // item Item leaves the plan
)

// PlanRequest is a plan_requests row.
type PlanRequest struct {
	ID         string // lowercase UUID v4
	PlanKey    string
	Mode       string // ModeSuggestion or ModeDraft
	Revision   int    // the plan revision the request is bound to (a draft would become Revision+1)
	SnapshotID string // the snapshot it is bound to
	State      string
	Reason     string          // why it failed or was cancelled; "" otherwise
	Cause      string          // what invalidated it (e.g. "plan revision 3 replaced 2"); "" otherwise
	Reply      json.RawMessage // the validated reply; nil until ready, kept once consumed or invalidated
	// The contract's v15 binding, captured when the request began:
	// Checkpoint is the task's newest scope checkpoint (its attempt ID),
	// AuditedHead the task's referenced code (its head), PrefixItem the
	// last item of the completed prefix at that revision. Each is empty
	// (nil) when there was none.
	Checkpoint  string
	AuditedHead string
	PrefixItem  *int
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Terminal reports whether the request's row is final: only pending and
// ready requests still change.
func (r PlanRequest) Terminal() bool { return r.State != RequestPending && r.State != RequestReady }

// BeginPlanRequest allocates request id for the plan, pending, bound to
// the plan's present revision and snapshot: "admission compares that
// complete identity before the Store atomically allocates the request". It
// refuses a stale caller (expectedRevision or expectedSnapshot is not the
// plan's), and a plan that already has a pending request of either mode:
// "There is one active invocation per plan identity", shared by
// suggestions and drafts ("several drafts may be ready at once", so ready
// requests do not count).
//
// It captures the contract's v15 binding from rows alone: the newest scope
// checkpoint (LatestCheckpoint), the task's referenced code as the audited
// head (what the runner's ledger says the task's code is, the head every
// continuation is audited against), and the completed prefix: the items,
// from item 1 on, each with a completed execute attempt at this revision or
// covered by an approved continuation (what Progress counts), ending at
// the first item that has none. A plan without a task, a task that never
// recorded code, or a plan whose item 1 is not done captures NULL. The
// binding records what the request planned from; it is not an apply
// guard, which is the contract's "ready and bound to the current revision
// and snapshot" alone.
func (t *Tx) BeginPlanRequest(planKey, mode string, id string, expectedRevision int, expectedSnapshot string) (PlanRequest, error) {
	if mode != ModeSuggestion && mode != ModeDraft {
		return PlanRequest{}, refuse(CodeBadInput, "a planning request's mode is %s or %s, not %q", ModeSuggestion, ModeDraft, mode)
	}
	if err := ids.CheckUUID("planning request ID", id); err != nil {
		return PlanRequest{}, refuse(CodeBadInput, "%s", err.Error())
	}
	p, err := t.Plan(planKey)
	if err != nil {
		return PlanRequest{}, err
	}
	if p.Revision != expectedRevision || p.SnapshotID != expectedSnapshot {
		return PlanRequest{}, refuse(CodeStaleVersion, "the plan is at revision %d on snapshot %s, not revision %d on snapshot %s",
			p.Revision, p.SnapshotID, expectedRevision, expectedSnapshot)
	}
	var active string
	err = t.queryRow(`SELECT id FROM plan_requests WHERE plan_key = ? AND state = ? LIMIT 1`, planKey, RequestPending).Scan(&active)
	switch {
	case err == nil:
		return PlanRequest{}, refuse(CodeActiveAttempt, "planning request %s for this plan is still pending", active)
	case !errors.Is(err, sql.ErrNoRows):
		return PlanRequest{}, err
	}
	var n int
	if err := t.queryRow(`SELECT COUNT(*) FROM plan_requests WHERE id = ?`, id).Scan(&n); err != nil {
		return PlanRequest{}, err
	}
	if n > 0 {
		return PlanRequest{}, refuse(CodeBadInput, "planning request ID %s is already used", id)
	}
	checkpoint, head, prefix, err := t.requestBinding(planKey)
	if err != nil {
		return PlanRequest{}, err
	}
	now := t.nowMS()
	if _, err := t.exec(`INSERT INTO plan_requests (id, plan_key, mode, revision, snapshot_id, state,
		checkpoint, audited_head, prefix_item, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, planKey, mode, p.Revision, p.SnapshotID, RequestPending, nullStr(checkpoint), nullStr(head), prefix, now, now); err != nil {
		return PlanRequest{}, err
	}
	return t.PlanRequest(id)
}

// requestBinding reads the v15 binding BeginPlanRequest captures; prefix
// is nil (NULL) or the prefix's last item.
func (t *Tx) requestBinding(planKey string) (checkpoint, head string, prefix any, err error) {
	cp, ok, err := t.LatestCheckpoint(planKey)
	if err != nil {
		return "", "", nil, err
	}
	if ok {
		checkpoint = cp.AttemptID
	}
	err = t.queryRow(`SELECT referenced_code_hash FROM tasks WHERE plan_key = ?`, planKey).Scan(&head)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && head == NoCode: // the column's default: no code recorded
		head = ""
	case err != nil:
		return "", "", nil, err
	}
	p, err := t.planProgress(planKey)
	if err != nil {
		return "", "", nil, err
	}
	last := 0
	for _, it := range p.items {
		if _, done := p.completed[it.Item]; !done {
			break
		}
		last = it.Item
	}
	if last > 0 {
		prefix = last
	}
	return checkpoint, head, prefix, nil
}

// CompletePlanRequest is the publication compare-and-swap
// (Store.completeSuggestions): "whose CAS also checks the request is still
// pending and bound to the current revision/snapshot". Request id becomes
// ready with reply only if it is pending, revision and snapshot are the
// ones it captured, and the plan is still there; and only if reply is at
// most MaxPlanReply bytes and valid for the request's mode (ParseCards
// against the bound revision's items, or ParseDraft), so that a ready
// request is always one the Store can apply. Every refusal writes nothing:
// a late or stale result loses, and the coordinator rereads the row.
func (t *Tx) CompletePlanRequest(id string, revision int, snapshot string, reply []byte) error {
	r, err := t.PlanRequest(id)
	if err != nil {
		return err
	}
	if r.State != RequestPending {
		return refuse(CodeIllegal, "planning request %s is %s, not pending", id, r.State)
	}
	if r.Revision != revision || r.SnapshotID != snapshot {
		return refuse(CodeNotCurrent, "planning request %s is bound to revision %d on snapshot %s, not revision %d on snapshot %s",
			id, r.Revision, r.SnapshotID, revision, snapshot)
	}
	p, err := t.Plan(r.PlanKey)
	if err != nil {
		return err
	}
	if p.Revision != r.Revision || p.SnapshotID != r.SnapshotID {
		return refuse(CodeNotCurrent, "the plan is at revision %d on snapshot %s; planning request %s was bound to revision %d on snapshot %s",
			p.Revision, p.SnapshotID, id, r.Revision, r.SnapshotID)
	}
	if len(reply) > MaxPlanReply {
		return refuse(CodeBadInput, "the planning reply is %d bytes; at most %d (1 MiB)", len(reply), MaxPlanReply)
	}
	var invalid error
	if r.Mode == ModeDraft {
		_, invalid = ParseDraft(reply)
	} else {
		items, err := t.PlanItems(r.PlanKey, r.Revision)
		if err != nil {
			return err // a storage error, never the refusal a bad reply is
		}
		_, invalid = ParseCards(reply, len(items))
	}
	if invalid != nil {
		return refuse(CodeBadInput, "the planning reply is not valid: %v", invalid)
	}
	_, err = t.exec(`UPDATE plan_requests SET state = ?, reply = ?, updated_at = ? WHERE id = ? AND state = ?`,
		RequestReady, string(reply), t.nowMS(), id, RequestPending)
	return err
}

// SettlePlanRequest is the coordinator's cleanup (settleSuggestion):
// "Failed, cancelled, and stale E outcomes use settleSuggestion, which can
// transition only the exact pending attempt at its captured revision and
// snapshot." Request id becomes state (failed, cancelled or invalidated,
// the durable form of stale) with reason, bounded as every diagnostic is
// ("Durable reasons use the Store's bounded format even when a provider
// returns an oversized diagnostic"), only when it is pending at revision
// and snapshot. Otherwise it changes nothing and returns the durable row,
// with no error: "If another process completed the request first, cleanup
// loses without changing the ready result", and the caller reconciles its
// classification from the row. An invalidated request keeps the reason as
// its cause too.
func (t *Tx) SettlePlanRequest(id string, revision int, snapshot string, state, reason string) (PlanRequest, error) {
	if state != RequestFailed && state != RequestCancelled && state != RequestInvalidated {
		return PlanRequest{}, refuse(CodeBadInput, "a planning request settles as %s, %s or %s, not %q",
			RequestFailed, RequestCancelled, RequestInvalidated, state)
	}
	if strings.TrimSpace(reason) == "" {
		return PlanRequest{}, refuse(CodeBadInput, "a settled planning request needs a reason")
	}
	r, err := t.PlanRequest(id)
	if err != nil {
		return PlanRequest{}, err
	}
	if r.State != RequestPending || r.Revision != revision || r.SnapshotID != snapshot {
		return r, nil
	}
	var cause any
	if state == RequestInvalidated {
		cause = bound(reason)
	}
	if _, err := t.exec(`UPDATE plan_requests SET state = ?, reason = ?, cause = COALESCE(?, cause), updated_at = ? WHERE id = ?`,
		state, bound(reason), cause, t.nowMS(), id); err != nil {
		return PlanRequest{}, err
	}
	return t.PlanRequest(id)
}

// CancelPlanRequest is the user's explicit cancel or dismissal
// (Store.cancelSuggestions, "request is pending or ready"): a pending or
// ready request becomes cancelled, "Cancelled by the user"; any other is
// returned unchanged. "Explicit user dismissal remains a separate Store
// operation": it is not bound to a captured revision, because the user
// names the request itself.
func (t *Tx) CancelPlanRequest(id string) (PlanRequest, error) {
	r, err := t.PlanRequest(id)
	if err != nil {
		return PlanRequest{}, err
	}
	if r.Terminal() {
		return r, nil
	}
	if _, err := t.exec(`UPDATE plan_requests SET state = ?, reason = ?, updated_at = ? WHERE id = ?`,
		RequestCancelled, words.CancelledByUser, t.nowMS(), id); err != nil {
		return PlanRequest{}, err
	}
	return t.PlanRequest(id)
}

// ConsumePlanRequest applies a ready request (Store.applySuggestion and
// Store.applyDraft): "request ready and bound to the current revision and
// snapshot". expectedRevision is the caller's compare-and-swap on the plan
// revision. Its reply becomes revision+1 through ImportPlan, "with every
// import check", so the context generation moves and every other pending
// or ready request of the plan is invalidated; the request itself is kept
// as consumed. A draft's items are the new plan; a suggestion's cards are
// applied to the bound revision's items (see ApplyCards). A refusal writes
// nothing.
func (t *Tx) ConsumePlanRequest(id string, expectedRevision int) (newRevision int, err error) {
	r, err := t.PlanRequest(id)
	if err != nil {
		return 0, err
	}
	if r.State != RequestReady {
		why := r.State
		if r.Cause != "" {
			why += " (" + r.Cause + ")"
		}
		return 0, refuse(CodeIllegal, "planning request %s is %s, not ready", id, why)
	}
	p, err := t.Plan(r.PlanKey)
	if err != nil {
		return 0, err
	}
	if p.Revision != expectedRevision {
		return 0, refuse(CodeStaleVersion, "plan is at revision %d, not %d", p.Revision, expectedRevision)
	}
	if p.Revision != r.Revision || p.SnapshotID != r.SnapshotID {
		return 0, refuse(CodeNotCurrent, "planning request %s is bound to revision %d on snapshot %s; the plan is at revision %d on snapshot %s",
			id, r.Revision, r.SnapshotID, p.Revision, p.SnapshotID)
	}
	var inputs []ItemInput
	if r.Mode == ModeDraft {
		draft, err := ParseDraft(r.Reply)
		if err != nil {
			return 0, refuse(CodeBadInput, "planning request %s's draft: %v", id, err)
		}
		inputs, err = specInputs(draft)
		if err != nil {
			return 0, err
		}
	} else {
		items, err := t.PlanItems(r.PlanKey, r.Revision)
		if err != nil {
			return 0, err
		}
		cards, err := ParseCards(r.Reply, len(items))
		if err != nil {
			return 0, refuse(CodeBadInput, "planning request %s's cards: %v", id, err)
		}
		next, err := ApplyCards(items, cards)
		if err != nil {
			return 0, refuse(CodeBadInput, "planning request %s's cards cannot be applied: %v", id, err)
		}
		inputs, err = specInputs(next)
		if err != nil {
			return 0, err
		}
	}
	newRevision, err = t.ImportPlan(r.PlanKey, expectedRevision, inputs)
	if err != nil {
		return 0, err
	}
	// The import has just invalidated every pending and ready request of
	// the plan, this one among them; it is the one that made the revision.
	if _, err := t.exec(`UPDATE plan_requests SET state = ?, cause = NULL, updated_at = ? WHERE id = ?`,
		RequestConsumed, t.nowMS(), id); err != nil {
		return 0, err
	}
	return newRevision, nil
}

// specInputs gives each item its canonical spec, as ImportPlan takes it.
func specInputs(items []plan.Item) ([]ItemInput, error) {
	out := make([]ItemInput, len(items))
	for i, it := range items {
		spec, err := it.Spec()
		if err != nil {
			return nil, err
		}
		out[i] = ItemInput{Title: it.Title, Spec: spec}
	}
	return out, nil
}

// FailLeftoverPlanRequests is startup's step for planning: "every request
// an earlier process left pending is failed ('The server stopped before
// this request finished. Ask again.'): its provider ran in that process's
// planning worker, so nothing can complete it." It returns how many it
// failed. Ready requests stay: their result is saved and still applies.
func (t *Tx) FailLeftoverPlanRequests(reason string) (int, error) {
	if strings.TrimSpace(reason) == "" {
		return 0, refuse(CodeBadInput, "failing leftover planning requests needs a reason")
	}
	res, err := t.exec(`UPDATE plan_requests SET state = ?, reason = ?, updated_at = ? WHERE state = ?`,
		RequestFailed, bound(reason), t.nowMS(), RequestPending)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// invalidatePlanRequests is "Revision and snapshot changes invalidate
// durable requests with their cause while retaining completed replies as
// stale history": in the transaction that moves the plan's revision or
// snapshot, right after that write, every pending or ready request of the
// plan whose binding is no longer the plan's present revision and
// snapshot becomes invalidated, its cause naming what changed in the words
// of a stale attempt's ("plan revision 3 replaced 2", "snapshot s2
// replaced s1"); consumed, failed and cancelled rows stay as they are.
// Each write of plans.revision and plans.snapshot_id (nextRevision,
// copyRevision, ChangeSnapshot) calls it. A call that moved nothing finds
// every binding current and changes nothing.
func (t *Tx) invalidatePlanRequests(planKey string) error {
	p, err := t.Plan(planKey)
	if err != nil {
		return err
	}
	rows, err := t.query(`SELECT id, revision, snapshot_id FROM plan_requests WHERE plan_key = ? AND state IN (?, ?)
		ORDER BY created_at, rowid`, planKey, RequestPending, RequestReady)
	if err != nil {
		return err
	}
	type stale struct{ id, cause string }
	var moved []stale
	for rows.Next() {
		var id string
		var captured Context
		if err := rows.Scan(&id, &captured.PlanRevision, &captured.SnapshotID); err != nil {
			rows.Close()
			return err
		}
		present := Context{PlanRevision: p.Revision, SnapshotID: p.SnapshotID}
		if cause := StaleCause(captured, present); cause != "" {
			moved = append(moved, stale{id, cause})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, m := range moved {
		if _, err := t.exec(`UPDATE plan_requests SET state = ?, cause = ?, updated_at = ? WHERE id = ?`,
			RequestInvalidated, bound(m.cause), t.nowMS(), m.id); err != nil {
			return err
		}
	}
	return nil
}

// Readers.

const requestCols = `id, plan_key, mode, revision, snapshot_id, state, COALESCE(reason, ''), COALESCE(cause, ''),
	reply, COALESCE(checkpoint, ''), COALESCE(audited_head, ''), prefix_item, created_at, updated_at`

func scanRequest(scan func(...any) error) (PlanRequest, error) {
	var r PlanRequest
	var reply sql.NullString
	var prefix sql.NullInt64
	var created, updated int64
	if err := scan(&r.ID, &r.PlanKey, &r.Mode, &r.Revision, &r.SnapshotID, &r.State, &r.Reason, &r.Cause,
		&reply, &r.Checkpoint, &r.AuditedHead, &prefix, &created, &updated); err != nil {
		return r, err
	}
	if reply.Valid {
		r.Reply = json.RawMessage(reply.String)
	}
	r.PrefixItem = intPtr(prefix)
	r.CreatedAt, r.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return r, nil
}

// PlanRequest reads one planning request.
func (t *Tx) PlanRequest(id string) (PlanRequest, error) {
	r, err := scanRequest(t.queryRow(`SELECT `+requestCols+` FROM plan_requests WHERE id = ?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return r, refuse(CodeNotFound, "no planning request %q", id)
	}
	return r, err
}

// PlanRequests lists the plan's planning requests of both modes, oldest
// first.
func (t *Tx) PlanRequests(planKey string) ([]PlanRequest, error) {
	rows, err := t.query(`SELECT `+requestCols+` FROM plan_requests WHERE plan_key = ? ORDER BY created_at, rowid`, planKey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PlanRequest
	for rows.Next() {
		r, err := scanRequest(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// The reply schema. The Store applies what it accepts, so the rules live
// here, with the Apply authority; the coordinator validates a provider's
// reply with the same functions before publication ("validate every card
// via E2").

// Card is one suggestion card. A suggestion's reply is a JSON array of
// cards:
//
//	[{"item": 2, "title": "…", "instructions": "…", "kind": "change"}, …]
//
// Item is the 1-based number of an item of the bound revision for a
// change or a remove, and 0 for an add (a new item). Title is required
// for every kind: it is what the screen lists, and for a remove it names
// the item leaving. Instructions are the item's new instructions (a
// change replaces them, "" leaves the item none).
type Card struct {
	Item         int    `json:"item"`
	Title        string `json:"title"`
	Instructions string `json:"instructions"`
	Kind         string `json:"kind"`
}

// DraftItem is one item of a draft's whole plan.
type DraftItem struct {
	Title        string `json:"title"`
	Instructions string `json:"instructions"`
}

// draftReply is a draft's reply: {"items": [{"title": …, "instructions": …}, …]},
// the whole next revision of the plan, 1 to plan.MaxItems items.
type draftReply struct {
	Items []DraftItem `json:"items"`
}

// ParseCards reads a suggestion's reply strictly: a JSON array of at most
// MaxCards cards (none is a valid answer: nothing to suggest), no unknown
// field, each card valid on its own and against a plan of items items, and
// at most one card per existing item. Errors name the card (1-based).
func ParseCards(reply []byte, items int) ([]Card, error) {
	if err := checkReplyText(reply, '[', "a JSON array of cards"); err != nil {
		return nil, err
	}
	var cards []Card
	if err := decodeStrict(reply, &cards); err != nil {
		return nil, err
	}
	if len(cards) > MaxCards {
		return nil, fmt.Errorf("%d cards; at most %d", len(cards), MaxCards)
	}
	owner := map[int]int{} // item → the card that names it
	for i, c := range cards {
		at := fmt.Sprintf("card %d", i+1)
		switch c.Kind {
		case CardAdd:
			if c.Item != 0 {
				return nil, fmt.Errorf("%s: an add card's item is 0 (a new item), not %d", at, c.Item)
			}
		case CardChange, CardRemove:
			if c.Item < 1 || c.Item > items {
				return nil, fmt.Errorf("%s: a %s card names an existing item, 1 to %d, not %d", at, c.Kind, items, c.Item)
			}
			if prev, dup := owner[c.Item]; dup {
				return nil, fmt.Errorf("%s: item %d already has card %d", at, c.Item, prev)
			}
			owner[c.Item] = i + 1
		default:
			return nil, fmt.Errorf("%s: kind is %q; it is %s, %s or %s", at, c.Kind, CardAdd, CardChange, CardRemove)
		}
		if err := checkCardText(at, c.Title, c.Instructions); err != nil {
			return nil, err
		}
	}
	return cards, nil
}

// ParseDraft reads a draft's reply strictly: {"items": [...]} with 1 to
// plan.MaxItems items, no unknown field, each with a valid title and
// instructions. Errors name the item (1-based).
func ParseDraft(reply []byte) ([]plan.Item, error) {
	if err := checkReplyText(reply, '{', `a JSON object {"items": [...]}`); err != nil {
		return nil, err
	}
	var d draftReply
	if err := decodeStrict(reply, &d); err != nil {
		return nil, err
	}
	if len(d.Items) == 0 || len(d.Items) > plan.MaxItems {
		return nil, fmt.Errorf("a draft has 1 to %d items, not %d", plan.MaxItems, len(d.Items))
	}
	out := make([]plan.Item, len(d.Items))
	for i, it := range d.Items {
		if err := checkCardText(fmt.Sprintf("item %d", i+1), it.Title, it.Instructions); err != nil {
			return nil, err
		}
		out[i] = plan.Item{Title: it.Title, Instructions: it.Instructions}
	}
	return out, nil
}

// ApplyCards is what applying a suggestion does to the bound revision's
// items: each change card replaces its item's title and instructions
// (keeping the item's declared files, links and scope), each remove card
// drops its item, and the add cards' new items follow the existing ones
// in card order. Items keep their order; an item link follows the item it
// names to its new number, and a link to a removed item refuses, since
// the plan would silently depend on something else. cards must have
// passed ParseCards against these items. A suggestion that applies no
// card, or leaves no item, refuses.
func ApplyCards(items []PlanItem, cards []Card) ([]plan.Item, error) {
	if len(cards) == 0 {
		return nil, errors.New("the suggestion has no card to apply")
	}
	byItem := map[int]Card{}
	for _, c := range cards {
		if c.Kind != CardAdd {
			byItem[c.Item] = c
		}
	}
	renumber := map[int]int{} // old item number → new; absent: removed
	var out []plan.Item
	for _, it := range items {
		spec, err := specOf(it)
		if err != nil {
			return nil, err
		}
		c, carded := byItem[it.Item]
		if carded && c.Kind == CardRemove {
			continue
		}
		if carded {
			spec.Title, spec.Instructions = c.Title, c.Instructions
		}
		out = append(out, spec)
		renumber[it.Item] = len(out)
	}
	for _, c := range cards {
		if c.Kind == CardAdd {
			out = append(out, plan.Item{Title: c.Title, Instructions: c.Instructions})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the suggestion removes every item; a plan has at least one")
	}
	if len(out) > plan.MaxItems {
		return nil, fmt.Errorf("the suggestion makes %d items; a plan has at most %d", len(out), plan.MaxItems)
	}
	for i := range out {
		if len(out[i].Links) == 0 {
			continue
		}
		links := make([]plan.Link, len(out[i].Links))
		for j, l := range out[i].Links {
			if l.Item > 0 {
				n, ok := renumber[l.Item]
				if !ok {
					return nil, fmt.Errorf("item %d (%q) depends on item %d, which the suggestion removes", i+1, out[i].Title, l.Item)
				}
				l.Item = n
			}
			links[j] = l
		}
		out[i].Links = links
	}
	return out, nil
}

// checkReplyText refuses a reply that is empty, not UTF-8 or not the
// expected JSON value, with an error a person can act on.
func checkReplyText(reply []byte, open byte, want string) error {
	if !utf8.Valid(reply) {
		return errors.New("the reply is not UTF-8")
	}
	trimmed := bytes.TrimLeft(reply, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != open {
		return fmt.Errorf("the reply is not %s", want)
	}
	return nil
}

// decodeStrict decodes one JSON value strictly (strictjson: keys match
// exactly and once, no unknown field, nothing after it): the planning
// agent's reply is outside input.
func decodeStrict(reply []byte, v any) error {
	if err := strictjson.Unmarshal(reply, v); err != nil {
		return fmt.Errorf("the reply is not valid JSON for its schema: %v", err)
	}
	return nil
}

// checkCardText holds a card's or a draft item's title and instructions
// to the plan format's rules (a title is one line, 1 to MaxCardTitle
// characters, not blank; instructions may hold tab, line feed and carriage
// return and no other control character), so that an applied reply always
// passes ImportPlan, and to MaxCardInstructions bytes.
func checkCardText(at, title, instructions string) error {
	n := utf8.RuneCountInString(title)
	switch {
	case n == 0:
		return fmt.Errorf("%s: title is empty", at)
	case n > MaxCardTitle:
		return fmt.Errorf("%s: title is %d characters; at most %d", at, n, MaxCardTitle)
	case strings.TrimSpace(title) == "":
		return fmt.Errorf("%s: title is blank", at)
	case strings.IndexFunc(title, unicode.IsControl) >= 0:
		return fmt.Errorf("%s: title contains a control character; a title is one line", at)
	}
	if len(instructions) > MaxCardInstructions {
		return fmt.Errorf("%s: instructions are %d bytes; at most %d (8 KiB)", at, len(instructions), MaxCardInstructions)
	}
	if strings.IndexFunc(instructions, func(c rune) bool { return unicode.IsControl(c) && c != '\t' && c != '\n' && c != '\r' }) >= 0 {
		return fmt.Errorf("%s: instructions contain a control character other than tab, line feed and carriage return", at)
	}
	return nil
}
