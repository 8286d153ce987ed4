package github

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/codeboost/codeboost/codehost"
)

const (
	opIssue = "read issue"
	opPull  = "read pull request"
	opMerge = "merge"
)

// Issue reads an issue. An issue number that names a pull request is
// codehost.ErrNotFound: planning must not plan from a pull request.
func (c *Client) Issue(ctx context.Context, repo string, number int) (codehost.Issue, error) {
	owner, name, err := checkRead(repo, number)
	if err != nil {
		return codehost.Issue{}, err
	}
	r, err := c.do(ctx, http.MethodGet, []string{"repos", owner, name, "issues", strconv.Itoa(number)}, nil)
	if err != nil {
		return codehost.Issue{}, c.unreachable(opIssue, repo, number, err)
	}
	if err := c.readStatus(opIssue, repo, number, r); err != nil {
		return codehost.Issue{}, err
	}
	var js issueJSON
	if err := decode(r.body, &js); err != nil {
		return codehost.Issue{}, c.malformed(opIssue, repo, number, r, err.Error())
	}
	if len(js.PullRequest) > 0 && string(js.PullRequest) != "null" {
		return codehost.Issue{}, &codehost.HostError{Op: opIssue, Repo: repo, Number: number, Status: r.status,
			Kind: codehost.ErrNotFound, Message: fmt.Sprintf("#%d is a pull request, not an issue", number)}
	}
	if msg := checkAnswer(number, js.Number, js.State); msg != "" {
		return codehost.Issue{}, c.malformed(opIssue, repo, number, r, msg)
	}
	is := codehost.Issue{Number: js.Number, Title: js.Title, State: js.State}
	if js.Body != nil {
		is.Body = *js.Body
	}
	return is, nil
}

// PullRequest reads a pull request.
func (c *Client) PullRequest(ctx context.Context, repo string, number int) (codehost.PullRequest, error) {
	owner, name, err := checkRead(repo, number)
	if err != nil {
		return codehost.PullRequest{}, err
	}
	r, err := c.do(ctx, http.MethodGet, []string{"repos", owner, name, "pulls", strconv.Itoa(number)}, nil)
	if err != nil {
		return codehost.PullRequest{}, c.unreachable(opPull, repo, number, err)
	}
	if err := c.readStatus(opPull, repo, number, r); err != nil {
		return codehost.PullRequest{}, err
	}
	var js pullJSON
	if err := decode(r.body, &js); err != nil {
		return codehost.PullRequest{}, c.malformed(opPull, repo, number, r, err.Error())
	}
	if msg := checkAnswer(number, js.Number, js.State); msg != "" {
		return codehost.PullRequest{}, c.malformed(opPull, repo, number, r, msg)
	}
	if !shaRE.MatchString(js.Head.SHA) {
		return codehost.PullRequest{}, c.malformed(opPull, repo, number, r, "the head SHA is not 40 lowercase hex digits")
	}
	pr := codehost.PullRequest{
		Number: js.Number, State: js.State, Merged: js.Merged,
		HeadSHA: js.Head.SHA, BaseRef: js.Base.Ref, Draft: js.Draft, Mergeable: js.Mergeable,
	}
	if js.Merged {
		// A merged pull request without its merge commit cannot be
		// reconciled; better an error now than an empty SHA recorded.
		if js.MergeCommitSHA == nil || !shaRE.MatchString(*js.MergeCommitSHA) {
			return codehost.PullRequest{}, c.malformed(opPull, repo, number, r, "merged without a valid merge commit SHA")
		}
		pr.MergeCommitSHA = *js.MergeCommitSHA
	}
	return pr, nil
}

// checkRead checks a read's arguments before anything is sent.
func checkRead(repo string, number int) (owner, name string, err error) {
	owner, name, err = codehost.SplitRepo(repo)
	if err != nil {
		return "", "", err
	}
	if err := codehost.CheckNumber(number); err != nil {
		return "", "", err
	}
	return owner, name, nil
}

// checkAnswer says what is wrong with an answer that is about another
// number or in a state codehost does not know, or "" when nothing is.
func checkAnswer(asked, got int, state string) string {
	if got != asked {
		return fmt.Sprintf("the answer is about #%d", got)
	}
	if state != "open" && state != "closed" {
		return fmt.Sprintf("unknown state %q", codehost.Clip(state))
	}
	return ""
}

// readStatus maps a read's status to an error; nil means a 200 whose body
// was read whole.
func (c *Client) readStatus(op, repo string, number int, r reply) error {
	if r.status == http.StatusOK {
		if r.bodyErr != nil {
			return c.malformed(op, repo, number, r, r.bodyErr.Error())
		}
		return nil
	}
	kind := definiteKind(r.status)
	if kind == nil {
		kind = codehost.ErrUnavailable
	}
	return &codehost.HostError{Op: op, Repo: repo, Number: number, Status: r.status, Kind: kind, Message: c.hostMessage(r)}
}

// definiteKind is the sentinel for a status that is a definite answer
// (nothing was changed), or nil for any other status.
func definiteKind(status int) error {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return codehost.ErrUnauthorized
	case http.StatusNotFound, http.StatusGone:
		return codehost.ErrNotFound
	case http.StatusMethodNotAllowed, http.StatusConflict, http.StatusUnprocessableEntity:
		return codehost.ErrRefused
	}
	return nil
}

// unreachable is a read whose request got no status line back.
func (c *Client) unreachable(op, repo string, number int, err error) error {
	return &codehost.HostError{Op: op, Repo: repo, Number: number, Kind: codehost.ErrUnavailable,
		Message: c.redact(err.Error()), Err: err}
}

// malformed is a 200 whose body could not be believed.
func (c *Client) malformed(op, repo string, number int, r reply, msg string) error {
	return &codehost.HostError{Op: op, Repo: repo, Number: number, Status: r.status, Kind: codehost.ErrUnavailable,
		Message: "malformed answer: " + c.redact(msg), Err: r.bodyErr}
}
