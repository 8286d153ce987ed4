package web

import (
	"net/http"
	"testing"

	"github.com/codeboost/codeboost/codehost"
)

// TestMergeWhileGitHubCannotSayIs503: a merge click whose GitHub read
// before admission gets no usable answer (here GitHub is still working
// out whether the pull request can merge) is 503 github-unavailable, and
// nothing is recorded, so the screen may send the same click again; it is
// neither a refusal to record nor a storage error.
func TestMergeWhileGitHubCannotSayIs503(t *testing.T) {
	f := allRoutesFixture(t)
	key := f.srv.tasks["demo"].Identity.Key()
	f.w.TaskPRs[key] = prRef{Repo: "owner/demo", Number: 3}
	f.w.GitHub.SetPullRequest("owner/demo", codehost.PullRequest{Number: 3, State: "open", HeadSHA: "c0ffee"}) // Mergeable unknown
	id := f.actionID()
	rec := f.send("POST", "/api/merge", mustJSON(t, MergeRequest{Task: "demo", ActionID: id}), false)
	wantOneError(t, "POST /api/merge while GitHub cannot say", rec, http.StatusServiceUnavailable, codeGitHubUnavailable)
	if n := f.actionCount(); n != 0 {
		t.Fatalf("%d actions recorded; a GitHub read that did not answer records nothing", n)
	}
}
