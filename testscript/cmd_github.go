package testscript

import (
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/sim"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// The simulated GitHub (sim.GitHub): a task's pull request and issue,
// what the next merge command answers, and reads held until released.

func init() {
	register(
		Command{Name: "gh-pr", Kind: Action, Keys: []Key{K("head", Text), K("state", Enum("open", "closed")), K("merged", Enum("true")), K("mergeable", Enum("true", "false", "unknown")), K("draft", Enum("true"))}, Usage: "gh-pr TASK N [head=H] [state=open|closed] [merged=true] [mergeable=true|false|unknown] [draft=true]",
			Summary: "sets (or replaces, from these arguments alone) the task's pull request on the simulated GitHub (repository owner/TASK, number N; a head that is not 40 hex is hashed to one) and names it as the task's pull request",
			Example: "gh-pr T1 7 head=h1", Run: cmdGHPR},
		Command{Name: "gh-issue", Kind: Action, Keys: []Key{K("title", Text), K("body", Text), K("fails", Text)}, Usage: "gh-issue TASK N [title=T] [body=B] [fails=MESSAGE]",
			Summary: "sets the task's issue on the simulated GitHub (owner/TASK, number N) and names it as the issue live planning reads before each start; with fails, every read of it fails with MESSAGE",
			Example: "gh-issue T1 3 'title=Crash on empty input' fails=timeout", Run: cmdGHIssue},
		Command{Name: "gh-next-merge", Kind: Action, Usage: "gh-next-merge merged|queued|refused|unknown|unknown-merged...",
			Summary: "queues what the next merge commands answer (default merged); unknown is no answer with nothing merged, unknown-merged no answer although GitHub merged",
			Example: "gh-next-merge unknown-merged", Run: cmdGHNextMerge},
		Command{Name: "gh-hold", Kind: Action, Usage: "gh-hold TASK",
			Summary: "holds the next reads of the task's pull request made on a request's goroutine until gh-release (the merge's own calls are never held: use at merge/before-final-reread)",
			Example: "gh-hold T1", Run: cmdGHHold},
		Command{Name: "gh-release", Kind: Action, Usage: "gh-release TASK",
			Summary: "lets the held reads of the task's pull request answer",
			Example: "gh-release T1", Run: cmdGHRelease},
	)
}

// mergeAnswers are what sim.GitHub's merge command can answer.
var mergeAnswers = []string{"merged", "queued", "refused", "unknown", "unknown-merged"}

var hex40 = regexp.MustCompile(`^[0-9a-f]{40}$`)

// sha40 is a head as the script names it: 40 hex as it is, any other
// name hashed to 40 hex, so a script can say head=h1.
func sha40(name string) string {
	if hex40.MatchString(name) {
		return name
	}
	sum := sha1.Sum([]byte(name))
	return hex.EncodeToString(sum[:])
}

func (s *scenario) taskRepo(name string) string { return "owner/" + strings.ToLower(name) }

func cmdGHPR(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: gh-pr TASK N [k=v...]")
	}
	key := s.planKey(ts, a.pos[0])
	n := atoi(ts, "N", a.pos[1])
	repo := s.taskRepo(a.pos[0])
	pr := codehost.PullRequest{Number: n, State: "open", HeadSHA: sha40("head"), BaseRef: "main"}
	t := true
	pr.Mergeable = &t
	if v, ok := a.lookup("head"); ok {
		pr.HeadSHA = sha40(v)
	}
	if v, ok := a.lookup("state"); ok {
		pr.State = v
	}
	if a.str("merged") == "true" {
		pr.Merged, pr.State = true, "closed"
	}
	if a.str("draft") == "true" {
		pr.Draft = true
	}
	switch a.str("mergeable") {
	case "false":
		f := false
		pr.Mergeable = &f
	case "unknown":
		pr.Mergeable = nil
	}
	w.GitHub.SetPullRequest(repo, pr)
	w.TaskPRs[key] = sim.PRRef{Repo: repo, Number: n}
}

func cmdGHIssue(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: gh-issue TASK N [title=T] [body=B] [fails=MESSAGE]")
	}
	n := atoi(ts, "N", a.pos[1])
	repo := s.taskRepo(a.pos[0])
	w.GitHub.SetIssue(repo, codehost.Issue{Number: n, Title: a.str("title"), Body: a.str("body"), State: "open"}, a.str("fails"))
	w.TaskIssues[s.planKey(ts, a.pos[0])] = sim.PRRef{Repo: repo, Number: n}
}

func cmdGHNextMerge(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) == 0 {
		ts.Fatalf("usage: gh-next-merge ANSWER...")
	}
	for _, ans := range a.pos {
		if !slices.Contains(mergeAnswers, ans) {
			ts.Fatalf("gh-next-merge: answer %q is not one of %s", ans, strings.Join(mergeAnswers, ", "))
		}
	}
	get(ts).world(ts).GitHub.NextMerge(a.pos...)
}

func (s *scenario) taskPR(ts *gts.TestScript, name string) sim.PRRef {
	r, ok := s.world(ts).TaskPRs[s.planKey(ts, name)]
	if !ok {
		ts.Fatalf("task %s has no pull request (gh-pr)", name)
	}
	return r
}

func cmdGHHold(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: gh-hold TASK")
	}
	r := s.taskPR(ts, a.pos[0])
	s.world(ts).GitHub.Hold(r.Repo, r.Number)
}

func cmdGHRelease(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: gh-release TASK")
	}
	r := s.taskPR(ts, a.pos[0])
	s.world(ts).GitHub.Release(r.Repo, r.Number)
}
