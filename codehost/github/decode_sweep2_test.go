package github_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/codehost"
)

// TestPullRequestAnswerNotWholeJSON: an answer whose fields all decode but
// that is not one well-formed JSON object (a duplicate key, trailing text)
// is malformed, never read as the pull request its first part describes:
// the client believes only a 200 it can read whole.
//
// Sweep survivor (seed 20261203): codehost/github/reads.go:Client.PullRequest:ignore-error:7011dab6.
func TestPullRequestAnswerNotWholeJSON(t *testing.T) {
	whole := fmt.Sprintf(`{"number":5,"state":"open","head":{"sha":%q},"base":{"ref":"main"},"merged":false,"merge_commit_sha":null`, sha(1))
	for _, c := range []struct{ name, body string }{
		{"duplicate key", whole + `,"state":"open"}`},
		{"trailing text", whole + `} {}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := stub(t, "", answer(200, c.body))
			pr, err := cl.PullRequest(context.Background(), repo, 5)
			wantErr(t, err, codehost.ErrUnavailable)
			if !strings.Contains(err.Error(), "malformed") {
				t.Errorf("error %q does not say the answer was malformed", err)
			}
			if pr != (codehost.PullRequest{}) {
				t.Errorf("PullRequest = %+v alongside an error", pr)
			}
		})
	}
}
