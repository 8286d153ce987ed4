package web

import (
	"net/http"
	"strconv"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
)

// maxImportBody is the contract's bound on POST /api/plan/import: 6 MiB +
// 16 KiB, so that every source the 1 MiB plan parser accepts fits even
// when every byte of it is escaped in the JSON string that carries it.
const maxImportBody = 6<<20 + 16<<10

// PlanImport is POST /api/plan/import's body: the plan document's source
// (docs/plan-format.md) as a string, so that what is hashed, stored and
// parsed is exactly what the person imported.
type PlanImport struct {
	Task             string `json:"task"`
	ActionID         string `json:"actionId"`
	ExpectedRevision int    `json:"expectedRevision"`
	Plan             string `json:"plan"`
}

// postPlanImport is POST /api/plan/import: a new plan revision from a plan
// document, if the plan is still at the expected revision. The document is
// parsed before any transaction (a bad one is 400 and stores nothing); the
// import and its user_actions row commit together, and a running attempt
// of the task then ends stale (its plan revision was replaced).
func (s *Server) postPlanImport(w http.ResponseWriter, r *http.Request) {
	var a PlanImport
	if !decode(w, r, maxImportBody, &a) {
		return
	}
	t, ok := s.actionTarget(w, a.Task, a.ActionID)
	if !ok {
		return
	}
	if a.ExpectedRevision < 1 {
		writeError(w, http.StatusBadRequest, codeBadInput, "expectedRevision must be the plan's present revision")
		return
	}
	doc, err := plan.Parse([]byte(a.Plan))
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadInput, "plan: "+err.Error())
		return
	}
	items, err := store.ItemInputs(doc)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadInput, "plan: "+err.Error())
		return
	}
	key := t.Identity.Key()
	request := a
	request.Task, request.ActionID = "", ""
	resp, err := s.opt.Runner.ReviewAction(r.Context(), store.Action{PlanKey: key, ActionID: a.ActionID, Kind: "plan/import", Request: request},
		func(tx *store.Tx) (store.Response, error) {
			rev, err := tx.ImportPlan(key, a.ExpectedRevision, items)
			return store.Response{Outcome: "imported", Message: "plan revision " + strconv.Itoa(rev)}, err
		})
	s.reply(w, r, t, "plan/import", resp, err)
}
