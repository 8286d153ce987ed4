package github

import (
	"encoding/json"
	"regexp"

	"github.com/codeboost/codeboost/strictjson"
)

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// decode reads body as exactly one JSON value into v, through strictjson's
// open reading: GitHub adds fields to its objects, so a key codehost does
// not read is skipped, but keys match exactly and once, so a repeated
// "merged" or a "Merged" beside "merged" is not half-believed, nor is a
// truncated or concatenated answer.
func decode(body []byte, v any) error { return strictjson.UnmarshalOpen(body, v) }

// issueJSON is the part of GitHub's issue object codehost reads.
type issueJSON struct {
	Number int     `json:"number"`
	Title  string  `json:"title"`
	Body   *string `json:"body"`
	State  string  `json:"state"`
	// PullRequest is present when the "issue" is a pull request: GitHub's
	// issues endpoint answers for both.
	PullRequest json.RawMessage `json:"pull_request"`
}

// pullJSON is the part of GitHub's pull request object codehost reads.
type pullJSON struct {
	Number         int     `json:"number"`
	State          string  `json:"state"`
	Merged         bool    `json:"merged"`
	MergeCommitSHA *string `json:"merge_commit_sha"`
	Draft          bool    `json:"draft"`
	Mergeable      *bool   `json:"mergeable"`
	Head           struct {
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

// mergeJSON is GitHub's answer to a merge.
type mergeJSON struct {
	Merged  *bool  `json:"merged"`
	SHA     string `json:"sha"`
	Message string `json:"message"`
}
