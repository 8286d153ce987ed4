package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter/docker"
	"github.com/codeboost/codeboost/web"
)

// A killPoint is one moment of an attempt's life at which the soak kills
// serve with SIGKILL. All but the first are named by the engine event that
// marks it for the attempt under way (a container of that kind, labelled
// with the attempt, reaching that action); the soak kills as soon as the
// event arrives, so the kill lands in the step the event begins.
type killPoint struct {
	name   string
	kind   docker.Kind // "" for admission: the kill follows the attempt's first sight
	action string      // the container event's action
}

// killPoints run from admission to commit extraction and past it: the
// allocation's keeper, the seed copy into it (the archive API's
// extract-to-dir), the tree check, the agent's create,
// start and exit, the audit's inspection, the commit extraction, and the
// storage removal that follows the completed row's terminal write (the run
// has not admitted its next item yet: the cut between two items).
var killPoints = []killPoint{
	{"admission", "", ""},
	{"storage allocation", docker.KindKeeper, "create"},
	{"seed copy", docker.KindKeeper, "extract-to-dir"},
	{"tree check", docker.KindTree, "start"},
	{"agent created", docker.KindAgent, "create"},
	{"agent started", docker.KindAgent, "start"},
	{"agent exited", docker.KindAgent, "die"},
	{"inspection", docker.KindInspect, "start"},
	{"commit extraction", docker.KindCommit, "start"},
	{"storage removal", docker.KindKeeper, "destroy"},
}

// The plan the kill soak runs: two items the fake agent edits and
// completes.
const twoEdits = `{
  "format": "codeboost-plan/1",
  "title": "Kill soak",
  "items": [
    {"title": "Edit the README", "instructions": "Append a line to README.md."},
    {"title": "Edit it again", "instructions": "Append another line to README.md."}
  ]
}`

// TestServeKilledAtEachPoint is issue 19's kill -9 soak, repeated
// CODEBOOST_SOAK times (`make soak`; once in CI): serve runs a two-item
// plan on Docker and is killed with SIGKILL at each of killPoints in turn,
// on the attempt under way, and restarted each time. Every restart must
// leave the task where the requeue or a person can move it, and never
// running with nothing running: the requeue admits the next attempt
// before the server listens (item 1 again after each kill during it, item
// 2 after the kill that cut the run between the items), the killed
// attempt is terminal (failed "Interrupted", or completed for the kill
// after its terminal write) and its objects are gone. At the end the plan
// finishes (the task is in review), with one runner commit per item,
// nothing left on the engine and the user's repository unchanged.
func TestServeKilledAtEachPoint(t *testing.T) {
	cli, agent, bin := begin(t)
	soak(t, func(t *testing.T) { killAtEachPoint(t, cli, bin, agent) })
}

func killAtEachPoint(t *testing.T, cli *client.Client, bin, agent string) {
	dir := t.TempDir()
	repo := userRepo(t, filepath.Join(dir, "repo"))
	before := digest(t, repo)
	env := writeConfig(t, dir, repo, agent)

	s := startServe(t, bin, env)
	s.importApproved(t, twoEdits, 2)
	since := time.Now()
	current := s.post(t, "/api/runner", web.RunnerAction{Task: taskName, Action: "start", ActionID: s.actionID(),
		ExpectedStateVersion: s.status(t).StateVersion, ExpectedReviewVersion: s.status(t).ReviewVersion}).AttemptID
	killed := map[string]string{} // attempt ID → the point it was killed at
	for i, p := range killPoints {
		if p.kind != "" {
			awaitContainerEvent(t, cli, current, p, since)
		}
		s.kill(t)
		killed[current] = p.name
		since = time.Now()
		s = startServe(t, bin, env)
		if released := releasePreparation(t, s, bin, env); released != nil {
			// Killed inside the preparation window: step 7 kept admission
			// closed for a person, who released it; the start after that
			// hands the requeue claim on.
			s = released
		}

		// The killed attempt is terminal and its objects are gone; the
		// requeue admitted the next one before the server listened.
		row := s.waitAttemptID(t, current, "")
		want := "failed"
		if p.name == "storage removal" {
			want = "completed" // killed after its terminal write
		}
		if row.State != want || (want == "failed" && !strings.HasPrefix(row.Diagnostic, "Interrupted")) {
			t.Fatalf("killed at %s: attempt %s is %s (%s), want %s", p.name, current, row.State, row.Diagnostic, want)
		}
		noAttemptObjects(t, cli, current, "killed at "+p.name)
		st := s.status(t)
		next := st.Task.CurrentAttemptID
		if next == current || next == "" || st.Task.Status != "running" {
			t.Fatalf("after the kill at %s the task is %s with attempt %q current: it shows running with nothing running\n%s",
				p.name, st.Task.Status, next, s.out.String())
		}
		item := 1
		if want == "completed" {
			item = 2
		}
		var a web.AttemptRow
		for _, r := range st.Attempts {
			if r.ID == next {
				a = r
			}
		}
		if a.Kind != "execute" || a.Item == nil || *a.Item != item || (a.State != "pending" && a.State != "running") {
			t.Fatalf("after the kill at %s (point %d), the requeue admitted %+v, want item %d's execute attempt under way", p.name, i+1, a, item)
		}
		if !strings.Contains(s.out.String(), "requeued e2e-repo/1/plan after the restart") {
			t.Fatalf("serve did not log the requeue after the kill at %s:\n%s", p.name, s.out.String())
		}
		if after := digest(t, repo); after != before {
			t.Fatalf("after the kill at %s the user's repository changed", p.name)
		}
		current = next
	}

	// The last requeue runs item 2 to its end: the plan finishes.
	s.until(t, "the plan finished (in review)", func(st web.TaskStatus) bool { return st.Task.Status == "in review" })
	r := s.review(t)
	var commits []string
	for _, h := range r.History {
		if h.AttemptID != "" {
			commits = append(commits, h.AttemptID)
		}
	}
	if len(commits) != 2 || killed[commits[0]] != "storage removal" || commits[1] != current {
		t.Fatalf("the ledger's runner commits are %v, want item 1's (killed at storage removal) and item 2's %s", commits, current)
	}
	if n := len(s.status(t).Attempts); n != len(killPoints)+1 {
		t.Fatalf("%d attempts, want %d: one a kill and the last", n, len(killPoints)+1)
	}
	s.stop(t, os.Interrupt)
	waitNoObjects(t, cli, "at the end of the kill soak")
	if after := digest(t, repo); after != before {
		t.Fatal("at the end of the kill soak the user's repository changed")
	}
}

// awaitContainerEvent waits, for at most two minutes, until the engine
// reports p's event (a container of p's kind labelled with attempt
// reaching p's action) at or after since.
func awaitContainerEvent(t *testing.T, cli *client.Client, attempt string, p killPoint, since time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := client.Filters{}.Add("type", "container").Add("event", p.action).
		Add("label", docker.LabelAttempt+"="+attempt).Add("label", docker.LabelKind+"="+string(p.kind))
	res := cli.Events(ctx, client.EventsListOptions{Since: fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()), Filters: f})
	select {
	case <-res.Messages:
	case err := <-res.Err:
		t.Fatalf("waiting for %s (%s %s of attempt %s): %v", p.name, p.kind, p.action, attempt, err)
	}
}

var unknownPreparation = regexp.MustCompile(`codeboost: unknown preparation ([0-9a-f-]{36}) `)

// releasePreparation is the person's part when a kill landed in the
// preparation window (between the "preparation starting" mark and its
// group ID's save): startup recovery's step 7 named the attempt and kept
// admission closed, and nothing was requeued. The person runs the printed
// --release-preparation (again, while the killed clone helper still holds
// the directory) and starts serve once more, which must then hand on the
// requeue the earlier start claimed. It returns that server, or nil when
// s's start named no unknown preparation.
func releasePreparation(t *testing.T, s *server, bin string, e env) *server {
	t.Helper()
	m := unknownPreparation.FindStringSubmatch(s.out.String())
	if m == nil {
		return nil
	}
	if !strings.Contains(s.out.String(), "admission stays closed") || strings.Contains(s.out.String(), "requeued ") {
		t.Fatalf("an unknown preparation, but admission is not closed with nothing requeued:\n%s", s.out.String())
	}
	s.stop(t, os.Interrupt)
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := exec.Command(bin, "serve", "--config", e.config, "--release-preparation", m[1]).CombinedOutput()
		if err == nil {
			break
		}
		if !strings.Contains(string(out), "still has a file open") || time.Now().After(deadline) {
			t.Fatalf("--release-preparation %s: %v\n%s", m[1], err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return startServe(t, bin, e)
}
