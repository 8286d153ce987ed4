package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestAuditBeforePublication is issue 10's end-to-end check of the
// file-scope audit ("Publishing a result" step 2) on real Docker and real
// git: each case is one plan item whose fake agent (steered by the
// "[fakeagent:MODE]" in its instructions) completes with a valid result.
// An agent that wrote only ordinary edits lands as one runner commit under
// its ref, shown by the diff view; one that wrote a file the repository
// ignores, made a nested repository, wrote inside a submodule directory or
// made a link out of the work tree sends the task to needs human with the
// finding on the attempt, and no commit, ledger entry or ref. An agent
// that tries to commit, or to write inside a submodule directory, cannot:
// the metadata and every gitlink are mounted read-only, so its write is
// refused and its edits land as codeboost's commit without it. The user's repository
// is byte-for-byte unchanged after every case.
//
// The contract's "change to a declared link's target" has no case: this
// plan format declares no links to files (its links are to items and
// URLs), so there is no declared link to snapshot.
func TestAuditBeforePublication(t *testing.T) {
	cli, agent, bin := begin(t)
	cases := []struct {
		mode    string
		finding string // "" for none: the work lands; else what the finding says (of what it may say)
	}{
		{"edit", ""},
		{"commit", ""},
		{"write-ignored", "the agent wrote files the repository ignores: fakeagent.log"},
		{"nest-repo", "the agent made a nested repository: vendor/x"},
		{"edit-submodule", ""}, // the submodule directory is mounted read-only: its write is refused, the edit lands
		{"link-out", "the agent made a link that points outside the work tree: escape -> /etc/passwd"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			dir := t.TempDir()
			repo := auditRepo(t, filepath.Join(dir, "repo"))
			before := digest(t, repo)
			e := writeConfig(t, dir, repo, agent)
			s := startServe(t, bin, e)
			s.importApproved(t, fmt.Sprintf(`{"format": "codeboost-plan/1", "title": "Audit", "items": [
				{"title": "Do as told", "instructions": "[fakeagent:%s]"}]}`, c.mode), 1)
			s.action(t, "start", "")
			a := s.waitAttempt(t, 1, "completed")
			st := s.status(t)
			refs := attemptRefs(t, filepath.Join(dir, "runner"))
			history := s.review(t).History
			if c.finding == "" {
				if a.SafetyFinding != "" || st.Task.Status == "needs human" {
					t.Fatalf("a clean %s was refused: task %s, finding %q", c.mode, st.Task.Status, a.SafetyFinding)
				}
				if len(history) == 0 || history[len(history)-1].AttemptID != a.ID || !strings.Contains(strings.Join(refs, " "), a.ID) {
					t.Fatalf("the %s attempt's commit is not in the ledger and under its ref: ledger %+v, refs %q", c.mode, history, refs)
				}
				diff := s.get(t, "/api/diff?task="+taskName+"&attempt="+a.ID)
				if !strings.Contains(diff, "+Edited by fakeagent.") {
					t.Fatalf("the diff view does not show the %s attempt's edit:\n%s", c.mode, diff)
				}
				if strings.Contains(diff, "planted") || strings.Contains(diff, ".git/") {
					t.Fatalf("the %s attempt's commit holds what it must not:\n%s", c.mode, diff)
				}
			} else {
				if !strings.Contains(a.SafetyFinding, c.finding) || st.Task.Status != "needs human" {
					t.Fatalf("%s: task %s, finding %q; want needs human, finding %q", c.mode, st.Task.Status, a.SafetyFinding, c.finding)
				}
				for _, h := range history {
					if h.AttemptID != "" {
						t.Fatalf("%s: the ledger holds a runner commit: %+v", c.mode, history)
					}
				}
				if len(refs) != 0 {
					t.Fatalf("%s: refs left in the runner-owned repository: %q", c.mode, refs)
				}
			}
			waitNoObjects(t, cli, "after the "+c.mode+" attempt")
			s.stop(t, syscall.SIGTERM)
			if digest(t, repo) != before {
				t.Fatalf("%s: the user's repository changed", c.mode)
			}
		})
	}
}

// auditRepo is userRepo with what the audit's cases need: an ignore rule
// (*.log) and a submodule, vendor/lib, as a gitlink to the repository's own
// first commit (git needs no .gitmodules to keep one).
func auditRepo(t *testing.T, dir string) string {
	t.Helper()
	userRepo(t, dir)
	git := func(args ...string) string { return gitIn(t, dir, args...) }
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := git("rev-list", "--max-parents=0", "HEAD")
	git("add", ".gitignore")
	git("update-index", "--add", "--cacheinfo", "160000,"+first+",vendor/lib")
	git("commit", "-q", "-m", "ignore logs, vendor a library")
	return dir
}

// attemptRefs lists the attempt refs of every runner-owned repository
// under the runner root (<root>/<owner>/repositories/*.git).
func attemptRefs(t *testing.T, root string) []string {
	t.Helper()
	repos, err := filepath.Glob(filepath.Join(root, "*", "repositories", "*.git"))
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, r := range repos {
		out, err := exec.Command("git", "--git-dir", r, "for-each-ref", "--format=%(refname)", "refs/codeboost/").CombinedOutput()
		if err != nil {
			t.Fatalf("git for-each-ref in %s: %v\n%s", r, err, out)
		}
		refs = append(refs, strings.Fields(string(out))...)
	}
	return refs
}
