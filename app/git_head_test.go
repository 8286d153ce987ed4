package app

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/web"
)

// TestGitHeadReadsTheRepositorysHead: the review load's HEAD is the
// task's repository's (git rev-parse HEAD); a task without a repository
// has none, and one that cannot be read is an error naming it.
func TestGitHeadReadsTheRepositorysHead(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git here")
	}
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(out))
	if h, err := gitHead(web.Task{Repository: repo}); err != nil || h != want {
		t.Errorf("HEAD of a repository: %q %v, want %q", h, err, want)
	}
	if h, err := gitHead(web.Task{}); err != nil || h != "" {
		t.Errorf("no repository: %q %v, want none", h, err)
	}
	notRepo := t.TempDir()
	if h, err := gitHead(web.Task{Repository: notRepo}); err == nil || h != "" || !strings.Contains(err.Error(), notRepo) {
		t.Errorf("not a repository: %q %v, want an error naming %s", h, err, notRepo)
	}
}
