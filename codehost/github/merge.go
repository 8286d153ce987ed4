package github

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/codeboost/codeboost/codehost"
)

// mergeRequest is the body of the merge request. merge_method is fixed:
// the coordinator's history model assumes merge commits.
type mergeRequest struct {
	SHA         string `json:"sha"`
	MergeMethod string `json:"merge_method"`
}

// Merge asks GitHub to merge the pull request at exactly headSHA.
//
// Only four kinds of answer are definite: 200 with merged true and a merge
// commit (merged), 202 (queued), 401/403/404/410 and 405/409/422 (refused,
// nothing merged). Every other outcome, including a redirect, a 400, a 429
// and a 200 that does not decode, is a *codehost.UnknownOutcomeError: a
// pull request read again costs one request, a merge wrongly recorded as
// not done costs a second merge.
func (c *Client) Merge(ctx context.Context, repo string, number int, headSHA string) (codehost.MergeResult, error) {
	owner, name, err := checkRead(repo, number)
	if err != nil {
		return codehost.MergeResult{}, err
	}
	if err := codehost.CheckSHA(headSHA); err != nil {
		return codehost.MergeResult{}, err
	}
	body, err := json.Marshal(mergeRequest{SHA: headSHA, MergeMethod: "merge"})
	if err != nil {
		return codehost.MergeResult{}, err // cannot happen: two strings
	}
	r, err := c.do(ctx, http.MethodPut, []string{"repos", owner, name, "pulls", strconv.Itoa(number), "merge"}, body)
	if err != nil {
		return codehost.MergeResult{}, &codehost.UnknownOutcomeError{Repo: repo, Number: number,
			Message: c.redact(err.Error()), Err: err}
	}
	unknown := func(msg string) error {
		return &codehost.UnknownOutcomeError{Repo: repo, Number: number, Status: r.status, Message: msg, Err: r.bodyErr}
	}
	switch r.status {
	case http.StatusOK:
		if r.bodyErr != nil {
			return codehost.MergeResult{}, unknown("malformed answer: " + c.redact(r.bodyErr.Error()))
		}
		var js mergeJSON
		if err := decode(r.body, &js); err != nil {
			return codehost.MergeResult{}, unknown("malformed answer: " + c.redact(err.Error()))
		}
		if js.Merged == nil || !*js.Merged || !shaRE.MatchString(js.SHA) {
			return codehost.MergeResult{}, unknown("the answer does not say merged with a merge commit: " + c.redact(js.Message))
		}
		return codehost.MergeResult{Merged: true, SHA: js.SHA}, nil
	case http.StatusAccepted:
		return codehost.MergeResult{Queued: true}, nil
	}
	if kind := definiteKind(r.status); kind != nil {
		return codehost.MergeResult{}, &codehost.HostError{Op: opMerge, Repo: repo, Number: number, Status: r.status,
			Kind: kind, Message: c.hostMessage(r)}
	}
	return codehost.MergeResult{}, unknown(c.hostMessage(r))
}
