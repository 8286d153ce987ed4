package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	_ "modernc.org/sqlite"

	"github.com/codeboost/codeboost/dadapter/docker/dockertest"
	"github.com/codeboost/codeboost/web"
)

// The regression tests of /work/shared/spec/regressions.tsv that the
// simulated scenarios (scenarios/testdata/R*.txtar) left to a real daemon
// (their PAST-ISSUE-3 lines): real `codeboost serve` processes, real
// database files and the real Docker D. Each drives serve only through its
// command line, its HTTP API and signals, reads the engine with the test's
// own client, and leaves cleanup to the product's own paths: serve's
// startup recovery, its cancel and shutdown, and the exact commands serve
// prints for a person.

// sleepPlan is one item that runs until stopped, so an attempt is running
// (an agent container on its task storage) whenever the test wants it.
const sleepPlan = `{
  "format": "codeboost-plan/1",
  "title": "Regressions",
  "items": [
    {"title": "Think for a long time", "instructions": "[fakeagent:sleep] Keep going until stopped."}
  ]
}`

// TestR026TwoDatabasesOneCrashes is R026 (two databases, one crashes).
//
// Contract: "Scoped recovery … recoverLeftovers(runnerOwner) acts only on
// resources whose io.codeboost.runner label equals the token", and
// "Recovery must therefore never touch another database's resources."
//
// Two serve processes over two database files and two runner roots share
// one engine, so two runner owner tokens. Both run an agent; serve A is
// killed with SIGKILL and restarted. A's recovery removes A's agent
// container and task storage and finalizes A's attempt; every object of B
// (agent container, keeper, volumes) is still there, B's agent is still
// running (same container, same start time) and B's runner still has it
// running. Then B's attempt is cancelled through B's API and both stop: no
// object is left. It fails if D's recovery is not scoped to its owner (a
// recovery that removes every io.codeboost.kind=agent container, or every
// object with a runner label, removes B's agent), or if A's restart does
// not recover A's leftovers.
func TestR026TwoDatabasesOneCrashes(t *testing.T) {
	cli, agent, bin := begin(t)

	dirA, dirB := t.TempDir(), t.TempDir()
	envA := writeConfig(t, dirA, userRepo(t, filepath.Join(dirA, "repo")), agent)
	envB := writeConfig(t, dirB, userRepo(t, filepath.Join(dirB, "repo")), agent)

	a := startServe(t, bin, envA)
	b := startServe(t, bin, envB)
	tokenA, tokenB := ownerToken(t, a), ownerToken(t, b)
	if tokenA == tokenB {
		t.Fatalf("two databases share the runner owner token %s", tokenA)
	}
	attemptA := a.runSleep(t)
	attemptB := b.runSleep(t)
	agentA := waitAgentRunning(t, cli, attemptA)
	agentB := waitAgentRunning(t, cli, attemptB)
	objsA := ownedBy(t, cli, tokenA)
	objsB := ownedBy(t, cli, tokenB)
	if len(objsA) < 2 || len(objsB) < 2 {
		t.Fatalf("expected each runner's agent and task storage: A %v, B %v", objsA, objsB)
	}
	startedB := startedAt(t, cli, agentB)

	a.kill(t)
	if !running(t, cli, agentA) {
		t.Fatalf("A's agent %s stopped with serve A: nothing left for recovery to prove", short(agentA))
	}
	a = startServe(t, bin, envA)
	if got := ownerToken(t, a); got != tokenA {
		t.Fatalf("A restarted with runner owner %s, want %s", got, tokenA)
	}

	// A's recovery: its agent and storage gone, its attempt finalized, and
	// the task requeued (lane I3): a new attempt of A's own runs.
	noAttemptObjects(t, cli, attemptA, "A's recovery")
	got := a.waitAttemptID(t, attemptA, "")
	requeuedA := a.waitAttempt(t, 2, "running")
	waitAgentRunning(t, cli, requeuedA.ID)
	for _, want := range []string{"recovery: finalized " + attemptA, "recovery: storage removed " + attemptA} {
		if !strings.Contains(a.out.String(), want) {
			t.Errorf("A's restart does not say %q:\n%s", want, a.out.String())
		}
	}
	t.Logf("A's attempt after kill -9 and restart: %s (%s)", got.State, got.Diagnostic)

	// B's objects: all still there, its agent the same running container.
	if after := ownedBy(t, cli, tokenB); !slices.Equal(after, objsB) {
		t.Fatalf("A's recovery changed B's objects:\nbefore %v\nafter  %v", objsB, after)
	}
	if !running(t, cli, agentB) || startedAt(t, cli, agentB) != startedB {
		t.Fatalf("B's agent %s is not the same running container after A's recovery", short(agentB))
	}
	if c := agentOf(t, cli, attemptB); c != agentB {
		t.Fatalf("the container labelled io.codeboost.attempt=%s is %q, want %s", attemptB, c, short(agentB))
	}
	b.waitAttemptID(t, attemptB, "running")
	for _, bad := range []string{tokenB, attemptB} {
		if strings.Contains(a.out.String(), bad) {
			t.Errorf("A's restart names B's %s:\n%s", bad, a.out.String())
		}
	}

	b.action(t, "cancel", attemptB)
	b.waitAttemptID(t, attemptB, "cancelled")
	b.stop(t, syscall.SIGTERM)
	a.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "after both runners stopped")
}

// TestR034CopiedDatabase is R034 (copied database).
//
// Contract: the runner owner token "is stored together with the database
// file's device and inode numbers … If the stored device and inode don't
// match the open file (the database was copied), F creates a new token. So
// a copy never shares a token with its original", and decision 1: "A copy
// is a different file with a different inode, so it is a different database
// with its own lock and its own runner owner token."
//
// Serve A runs an agent and is killed with SIGKILL; its database (cb.db and
// its -wal and -shm files) is copied to a new directory, and serve starts
// on the copy with its own runner root. The copy says a runner owner token
// of its own; its recovery finalizes the copied running row but leaves A's
// agent (same container, still running, same start time) and A's task
// storage alone, and reports none of them. With the copy still serving, A
// restarts on the original: same token as before, and its recovery removes
// its own leftovers. No object is left. It fails if a copy keeps the
// original's token (mutant/copy-keeps-token: the copy's recovery would
// remove A's agent and take A's storage) or if recovery is not scoped.
func TestR034CopiedDatabase(t *testing.T) {
	cli, agent, bin := begin(t)

	dirA := t.TempDir()
	repo := userRepo(t, filepath.Join(dirA, "repo"))
	envA := writeConfig(t, dirA, repo, agent)
	a := startServe(t, bin, envA)
	tokenA := ownerToken(t, a)
	attempt := a.runSleep(t)
	agentA := waitAgentRunning(t, cli, attempt)
	objsA := ownedBy(t, cli, tokenA)
	startedA := startedAt(t, cli, agentA)
	a.kill(t)

	dirC := t.TempDir()
	copied := copyDatabase(t, filepath.Join(dirA, "cb.db"), dirC)
	t.Logf("copied %v", copied)
	envC := writeConfig(t, dirC, repo, agent)
	c := startServe(t, bin, envC)
	tokenC := ownerToken(t, c)
	if tokenC == tokenA {
		t.Fatalf("the copy kept the original's runner owner token %s", tokenA)
	}
	if tokenOf(t, filepath.Join(dirC, "cb.db")) != tokenC || tokenOf(t, filepath.Join(dirA, "cb.db")) != tokenA {
		t.Fatalf("stored tokens: copy %s, original %s; want %s, %s", tokenOf(t, filepath.Join(dirC, "cb.db")),
			tokenOf(t, filepath.Join(dirA, "cb.db")), tokenC, tokenA)
	}
	// The copy's own row is finalized (its D found no storage of the
	// copy's token for it); A's objects are untouched and unreported.
	c.waitAttemptID(t, attempt, "")
	if after := ownedBy(t, cli, tokenA); !slices.Equal(after, objsA) {
		t.Fatalf("the copy's recovery changed A's objects:\nbefore %v\nafter  %v", objsA, after)
	}
	if !running(t, cli, agentA) || startedAt(t, cli, agentA) != startedA {
		t.Fatalf("A's agent %s is not the same running container after the copy's recovery", short(agentA))
	}
	for _, bad := range []string{tokenA, "remove this object by hand", "matches no attempt", "recovery: storage removed"} {
		if strings.Contains(c.out.String(), bad) {
			t.Errorf("the copy's startup says %q:\n%s", bad, c.out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dirA, "runner", tokenA)); err != nil {
		t.Errorf("A's runner directory: %v", err)
	}

	// A restarts on the original while the copy serves: its own lock, its
	// own token, its own leftovers removed.
	a = startServe(t, bin, envA)
	if got := ownerToken(t, a); got != tokenA {
		t.Fatalf("A restarted with runner owner %s, want %s", got, tokenA)
	}
	noAttemptObjects(t, cli, attempt, "A's recovery")
	a.waitAttemptID(t, attempt, "")
	// Each database requeues its own task (lane I3), under its own token.
	for _, s := range []*server{c, a} {
		waitAgentRunning(t, cli, s.waitAttempt(t, 2, "running").ID)
	}
	if !strings.Contains(a.out.String(), "recovery: storage removed "+attempt) {
		t.Errorf("A's restart does not say it removed its storage:\n%s", a.out.String())
	}
	c.stop(t, syscall.SIGTERM)
	a.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "after both runners stopped")
}

// TestR077CorruptRunnerToken is R077 (corrupt runner token).
//
// Contract: the runner owner token is "exactly 32 lowercase hexadecimal
// characters … A stored value that does not match is refused before it is
// used as a label or in any path, and startup exits", read in startup
// recovery step 2a, before D's recovery (2c).
//
// Serve runs an agent and is killed with SIGKILL, leaving the agent and
// its storage. Another writer stores "../NOT-HEX" as the token. Serve,
// with the agent configured, exits non-zero with the token refusal before
// recovery starts: the agent container of the real token is the same
// running container, its objects are all there, no object on the engine
// carries the bad value, the engine saw no event about a codeboost object
// while serve started, and no directory was made from the value. With the
// token restored, serve starts and its recovery removes the leftovers. It
// fails if the token is not checked before use (mutant/
// owner-token-unchecked: D's recovery runs with the bad value, or a path
// under the runner root is made from it), or if the check moves after
// newD or recovery.
func TestR077CorruptRunnerToken(t *testing.T) {
	cli, agent, bin := begin(t)

	dir := t.TempDir()
	db := filepath.Join(dir, "cb.db")
	e := writeConfig(t, dir, userRepo(t, filepath.Join(dir, "repo")), agent)
	s := startServe(t, bin, e)
	token := ownerToken(t, s)
	attempt := s.runSleep(t)
	agentID := waitAgentRunning(t, cli, attempt)
	objs := ownedBy(t, cli, token)
	started := startedAt(t, cli, agentID)
	s.kill(t)

	const bad = "../NOT-HEX"
	setToken(t, db, bad)
	before := dbDump(t, db)
	began := time.Now()
	s, err := tryServe(t, bin, e)
	ended := time.Now()
	if err == nil {
		t.Fatalf("serve started with the runner owner token %q:\n%s", bad, s.out.String())
	}
	out := s.out.String()
	want := `the stored runner owner token is not 32 lowercase hexadecimal characters: "../NOT-HEX"`
	if !strings.Contains(out, want) || s.cmd.ProcessState.ExitCode() == 0 {
		t.Fatalf("serve exited %v without %q:\n%s", err, want, out)
	}
	for _, never := range []string{"codeboost: runner owner ", "recovery: started", "D recovery", "serving "} {
		if strings.Contains(out, never) {
			t.Errorf("serve with a bad token says %q:\n%s", never, out)
		}
	}
	// Nothing on the engine made or touched.
	if after := ownedBy(t, cli, token); !slices.Equal(after, objs) {
		t.Errorf("the refused start changed the leftovers:\nbefore %v\nafter  %v", objs, after)
	}
	if !running(t, cli, agentID) || startedAt(t, cli, agentID) != started {
		t.Errorf("the leftover agent %s is not the same running container", short(agentID))
	}
	if got := labelledWithValue(t, cli, "NOT-HEX"); len(got) > 0 {
		t.Errorf("objects carry the bad token: %v", got)
	}
	if ev := codeboostEvents(t, cli, began, ended); len(ev) > 0 {
		t.Errorf("the engine saw codeboost events during the refused start:\n\t%s", strings.Join(ev, "\n\t"))
	}
	for _, p := range []string{filepath.Join(dir, "NOT-HEX"), filepath.Join(dir, "runner", "NOT-HEX"), filepath.Join(dir, "runner", bad)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists: a path was made from the bad token", p)
		}
	}
	if after := dbDump(t, db); after != before {
		t.Errorf("the refused start changed the database:\nbefore\n%s\nafter\n%s", before, after)
	}

	// Restored, the token is the runner's again: recovery cleans up.
	setToken(t, db, token)
	s = startServe(t, bin, e)
	if got := ownerToken(t, s); got != token {
		t.Fatalf("serve restarted with runner owner %s, want %s", got, token)
	}
	s.waitAttemptID(t, attempt, "")
	noAttemptObjects(t, cli, attempt, "recovery with the restored token")
	s.waitAttempt(t, 2, "running") // requeued (lane I3)
	s.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "after recovery with the restored token and a clean shutdown")
}

// TestR037R096LegacyResourcesNeverRemovedAutomatically is R037 (legacy
// resource present) and R096 (legacy resources are never removed
// automatically).
//
// Contract, "Unowned resources": "Resources with codeboost labels but no
// io.codeboost.runner label (from builds before this change) fail closed.
// The report lists them, and F refuses to open admission while any exist.
// codeboost never removes them itself … So startup stops with a message
// that names each resource as the exact docker container rm -f / docker
// network rm / docker volume rm command that removes it … The user stops
// every older codeboost process, runs those commands, and starts again."
//
// An older build's objects are planted: a running agent container
// (io.codeboost.kind=agent) on a volume, the volume, and a network, each
// with codeboost labels but no runner label. Serve starts and lists
// exactly the three removal commands, says admission stays closed, and
// refuses a start; the objects are still there, the container the same
// running one. A clean restart lists the same three and removes nothing.
// The printed commands, run as printed with sh -c, remove them; the next
// start lists nothing and admits a start. It fails if legacy objects are
// ignored (mutant/legacy-ignored: admission opens), removed by serve, or
// worded as another command than the one that removes them.
func TestR037R096LegacyResourcesNeverRemovedAutomatically(t *testing.T) {
	cli, agent, bin := begin(t)
	ctx := context.Background()

	// The older build's objects. If the test fails before the printed
	// commands removed them, its own cleanup removes exactly these.
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	volName, ctrName, netName := "codeboost-legacy-vol-"+suffix, "codeboost-legacy-agent-"+suffix, "codeboost-legacy-net-"+suffix
	legacy := map[string]string{"io.codeboost.kind": "agent", "io.codeboost.attempt": "00000000-0000-4000-8000-000000000037"}
	if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: volName, Labels: map[string]string{"io.codeboost.kind": "task-work"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.NetworkCreate(ctx, netName, client.NetworkCreateOptions{Labels: map[string]string{"io.codeboost.kind": "network"}, Internal: true}); err != nil {
		t.Fatal(err)
	}
	host := dockertest.Sandbox()
	host.Mounts = []mount.Mount{{Type: mount.TypeVolume, Source: volName, Target: "/task"}}
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: ctrName, HostConfig: host,
		Config: &container.Config{Image: agent, User: "1000:1000", Cmd: []string{"sleep"}, Labels: legacy}})
	if err != nil {
		t.Fatal(err)
	}
	ctrID := res.ID
	t.Cleanup(func() {
		if t.Failed() {
			cli.ContainerRemove(ctx, ctrID, client.ContainerRemoveOptions{Force: true})
			cli.VolumeRemove(ctx, volName, client.VolumeRemoveOptions{})
			cli.NetworkRemove(ctx, netName, client.NetworkRemoveOptions{})
		}
	})
	if _, err := cli.ContainerStart(ctx, ctrID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	started := startedAt(t, cli, ctrID)
	want := []string{"docker container rm -f " + ctrName, "docker network rm " + netName, "docker volume rm " + volName}
	present := func(when string) {
		t.Helper()
		if !running(t, cli, ctrID) || startedAt(t, cli, ctrID) != started {
			t.Fatalf("%s: the legacy container is not the same running container", when)
		}
		if _, err := cli.VolumeInspect(ctx, volName, client.VolumeInspectOptions{}); err != nil {
			t.Fatalf("%s: the legacy volume: %v", when, err)
		}
		if _, err := cli.NetworkInspect(ctx, netName, client.NetworkInspectOptions{}); err != nil {
			t.Fatalf("%s: the legacy network: %v", when, err)
		}
	}

	dir := t.TempDir()
	e := writeConfig(t, dir, userRepo(t, filepath.Join(dir, "repo")), agent)
	s := startServe(t, bin, e)
	if got := handCommands(s); !slices.Equal(got, want) {
		t.Fatalf("serve lists %q, want exactly %q:\n%s", got, want, s.out.String())
	}
	if !strings.Contains(s.out.String(), "admission stays closed until the above is handled") {
		t.Errorf("serve does not say admission stays closed:\n%s", s.out.String())
	}
	s.importSleep(t)
	code, outcome, msg := s.tryAction(t, "start", "")
	t.Logf("start with legacy objects present: %d %s %q", code, outcome, msg)
	if code != http.StatusConflict || outcome != "refused" || !strings.Contains(msg, "startup recovery left something for a person to handle") {
		t.Fatalf("a start with legacy objects present: %d %s %q, want a refusal that says why", code, outcome, msg)
	}
	if st := s.status(t); st.Available || st.Startable || len(st.Attempts) > 0 {
		t.Fatalf("with legacy objects present: available %t, startable %t, attempts %+v", st.Available, st.Startable, st.Attempts)
	} else {
		t.Logf("status with legacy objects present: label %q", st.Label)
	}
	present("after the first start")

	// A clean shutdown and a second start remove nothing either.
	s.stop(t, syscall.SIGTERM)
	present("after a clean shutdown")
	s = startServe(t, bin, e)
	if got := handCommands(s); !slices.Equal(got, want) {
		t.Fatalf("the second start lists %q, want exactly %q:\n%s", got, want, s.out.String())
	}
	present("after the second start")
	s.stop(t, syscall.SIGTERM)

	// The person runs the printed commands, as printed.
	for _, cmd := range want {
		if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	}
	s = startServe(t, bin, e)
	if got := handCommands(s); len(got) > 0 || strings.Contains(s.out.String(), "admission stays closed") {
		t.Fatalf("after the manual removal serve still lists %q:\n%s", got, s.out.String())
	}
	s.action(t, "start", "")
	a := s.waitAttempt(t, 1, "running")
	s.action(t, "cancel", a.ID)
	s.waitAttemptID(t, a.ID, "cancelled")
	s.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "after the last start")
}

// TestR071DockerRecoveryFails is R071 (D recovery fails), on the real
// Docker D under a real serve process.
//
// Contract, startup recovery step 2d: "If D's recovery rejects, startup
// stops here, before step 3 finalizes any row or step 6 hands anything to
// I3: close the Store, release the lock, and exit with D's diagnostic. The
// next start retries." And "Scoped recovery": "It rejects with a
// RecoveryError (bounded message, plus the objects it did remove) if
// anything cannot be stopped or removed".
//
// Serve runs an agent and is killed with SIGKILL. A second leftover agent
// container of the same runner (complete owner labels, an attempt no row
// names) is planted. Two failed starts follow, each exiting non-zero with
// the database unchanged (no row finalized, no requeue claimed):
//
//  1. the engine is unreachable (DOCKER_HOST=unix:///nonexistent.sock in
//     serve's environment): the message names the engine;
//  2. recovery fails half-way: serve talks to the real engine through a
//     proxy that refuses the removal of the real leftover agent, so D's
//     recovery lists, removes the planted container, fails on the agent,
//     and serve exits with D's diagnostic naming both; the agent is the
//     same running container, the task storage is whole, nothing was
//     exported or finalized.
//
// Then serve starts on the real engine: the failed starts released the
// lock, and its recovery removes the agent and the storage and finalizes
// the row. It fails if a D recovery failure is ignored (mutant/
// recovery-ignores-d-failure: admission opens, or rows are finalized over
// storage that was not recovered), if the lock is not released, or if the
// error does not name what it did and did not remove.
func TestR071DockerRecoveryFails(t *testing.T) {
	cli, agent, bin := begin(t)
	ctx := context.Background()

	dir := t.TempDir()
	db := filepath.Join(dir, "cb.db")
	e := writeConfig(t, dir, userRepo(t, filepath.Join(dir, "repo")), agent)
	s := startServe(t, bin, e)
	token := ownerToken(t, s)
	attempt := s.runSleep(t)
	agentID := waitAgentRunning(t, cli, attempt)
	started := startedAt(t, cli, agentID)
	s.kill(t)

	// A second leftover of this runner that recovery can remove.
	planted := "codeboost-agent-00000000-0000-4000-8000-000000000071-e2e"
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: planted,
		Config: &container.Config{Image: agent, User: "1000:1000", Cmd: []string{"sleep"}, Labels: map[string]string{
			"io.codeboost.runner": token, "io.codeboost.kind": "agent",
			"io.codeboost.attempt":    "00000000-0000-4000-8000-000000000071",
			"io.codeboost.allocation": "00000000-0000-4000-8000-000000000072",
		}}, HostConfig: dockertest.Sandbox()})
	if err != nil {
		t.Fatal(err)
	}
	plantedID := res.ID
	t.Cleanup(func() {
		if t.Failed() {
			cli.ContainerRemove(ctx, plantedID, client.ContainerRemoveOptions{Force: true})
		}
	})
	objs := ownedBy(t, cli, token)
	storage := storageOf(objs)
	before := dbDump(t, db)
	if !strings.Contains(before, attempt) || !strings.Contains(before, "running") {
		t.Fatalf("the database does not hold the running attempt:\n%s", before)
	}
	unchanged := func(when string) {
		t.Helper()
		if after := dbDump(t, db); after != before {
			t.Fatalf("%s: the database changed:\nbefore\n%s\nafter\n%s", when, before, after)
		}
		if !running(t, cli, agentID) || startedAt(t, cli, agentID) != started {
			t.Fatalf("%s: the leftover agent %s is not the same running container", when, short(agentID))
		}
		if got := storageOf(ownedBy(t, cli, token)); !slices.Equal(got, storage) {
			t.Fatalf("%s: task storage changed:\nbefore %v\nafter  %v", when, storage, got)
		}
	}
	failed := func(s *server, err error, wants ...string) string {
		t.Helper()
		out := s.out.String()
		if err == nil {
			t.Fatalf("serve started:\n%s", out)
		}
		if s.cmd.ProcessState.ExitCode() == 0 {
			t.Fatalf("serve exited 0:\n%s", out)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Fatalf("serve exited %v without %q:\n%s", err, w, out)
			}
		}
		for _, never := range []string{"recovery: finalized", "recovery: storage removed", "requeue", "serving ", "runner open"} {
			if strings.Contains(out, never) {
				t.Fatalf("a failed start says %q:\n%s", never, out)
			}
		}
		return out
	}

	// 1. No engine answers.
	e.environ = []string{"DOCKER_HOST=unix:///nonexistent.sock"}
	s, err = tryServe(t, bin, e)
	out := failed(s, err, "the Docker engine at unix:///nonexistent.sock does not answer")
	t.Logf("unreachable engine: %v\n%s", err, out)
	unchanged("after a start with no engine")
	if _, err := cli.ContainerInspect(ctx, plantedID, client.ContainerInspectOptions{}); err != nil {
		t.Fatalf("the planted leftover went with no engine to remove it: %v", err)
	}

	// 2. The engine refuses to remove the real agent: D's recovery has
	// removed the planted one when it fails.
	proxy := startFaultProxy(t, cli.DaemonHost(), func(r *http.Request) bool {
		return r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/containers/"+agentID)
	})
	e.environ = []string{"DOCKER_HOST=unix://" + proxy.path}
	s, err = tryServe(t, bin, e)
	out = failed(s, err, "D's recovery failed: docker: recovery of runner "+token+": could not remove container",
		short(agentID), "removed container "+planted)
	t.Logf("recovery failing half-way: %v\n%s", err, out)
	if proxy.failed.Load() == 0 {
		t.Fatal("the proxy refused nothing: the failure did not come from the engine")
	}
	if _, err := cli.ContainerInspect(ctx, plantedID, client.ContainerInspectOptions{}); err == nil {
		t.Fatal("the planted leftover is still there: recovery did not get half-way")
	}
	unchanged("after a recovery that failed half-way")

	// The next start retries: the lock was released, recovery completes.
	e.environ = nil
	s = startServe(t, bin, e)
	got := s.waitAttemptID(t, attempt, "")
	if !strings.Contains(s.out.String(), "recovery: storage removed "+attempt) {
		t.Errorf("the retry does not say it removed the storage:\n%s", s.out.String())
	}
	t.Logf("attempt after the retry: %s (%s)", got.State, got.Diagnostic)
	noAttemptObjects(t, cli, attempt, "the retried recovery")
	s.waitAttempt(t, 2, "running") // requeued (lane I3) once recovery completed
	s.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "after the retried recovery and a clean shutdown")
}

// begin is every Docker test's start: the engine's client, the Docker
// lock (held to the end), a leak check after every other cleanup, the time
// the lock was held in the log, the fake agent's image and the binary.
func begin(t *testing.T) (cli *client.Client, agent, bin string) {
	t.Helper()
	cli = dockertest.Client(t)
	dockertest.Serial(t)
	t.Cleanup(func() { dockertest.NoLeaks(t, cli) })
	timed(t)
	return cli, dockertest.FakeAgentImage(t, cli), buildCodeboost(t)
}

// timed logs how long the test held the Docker lock (its duration less
// any wait for another test process).
func timed(t *testing.T) {
	began := time.Now()
	t.Cleanup(func() { t.Logf("held the Docker lock for %v", time.Since(began).Round(time.Millisecond)) })
}

// importSleep imports sleepPlan and approves its item.
func (s *server) importSleep(t *testing.T) { s.importApproved(t, sleepPlan, 1) }

// importApproved imports doc, a plan of items items, and approves them all.
func (s *server) importApproved(t *testing.T, doc string, items int) {
	t.Helper()
	s.post(t, "/api/plan/import", web.PlanImport{Task: taskName, ActionID: s.actionID(), ExpectedRevision: s.review(t).Revision, Plan: doc})
	s.approveAll(t, items)
}

// runSleep imports sleepPlan, starts it and returns the running attempt.
func (s *server) runSleep(t *testing.T) string {
	t.Helper()
	s.importSleep(t)
	s.action(t, "start", "")
	return s.waitAttempt(t, 1, "running").ID
}

// tryAction posts a runner action and returns the HTTP status, the reply's
// outcome (or the error's code) and its message, whatever they are.
func (s *server) tryAction(t *testing.T, action, attemptID string) (status int, outcome, message string) {
	t.Helper()
	st := s.status(t)
	b, _ := json.Marshal(web.RunnerAction{Task: taskName, Action: action, AttemptID: attemptID, ActionID: s.actionID(),
		ExpectedStateVersion: st.StateVersion, ExpectedReviewVersion: st.ReviewVersion})
	resp, err := http.Post(s.url+"/api/runner", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r struct {
		web.ActionReply
		Error *struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("POST /api/runner %s: %d %s", b, resp.StatusCode, raw)
	}
	if r.Error != nil {
		return resp.StatusCode, r.Error.Code, r.Error.Message
	}
	return resp.StatusCode, r.Outcome, r.Message
}

var ownerLine = regexp.MustCompile(`codeboost: runner owner ([0-9a-f]{32})\b`)

// ownerToken is the token serve's "runner owner" line names.
func ownerToken(t *testing.T, s *server) string {
	t.Helper()
	m := ownerLine.FindAllStringSubmatch(s.out.String(), -1)
	if len(m) != 1 {
		t.Fatalf("serve names %d runner owners:\n%s", len(m), s.out.String())
	}
	return m[0][1]
}

// handCommands are the commands serve tells a person to run by hand.
func handCommands(s *server) []string {
	const prefix = "codeboost: remove this object by hand: "
	var out []string
	for _, line := range strings.Split(s.out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

// agentOf is the ID of the container labelled io.codeboost.attempt=id
// (the attempt's agent), or "" when there is none. More than one fails.
func agentOf(t *testing.T, cli *client.Client, attemptID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := client.Filters{}.Add("label", "io.codeboost.attempt="+attemptID).Add("label", "io.codeboost.kind=agent")
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	switch len(res.Items) {
	case 0:
		return ""
	case 1:
		return res.Items[0].ID
	}
	t.Fatalf("%d agent containers for attempt %s", len(res.Items), attemptID)
	return ""
}

// waitAgentRunning waits for the attempt's agent container to run.
func waitAgentRunning(t *testing.T, cli *client.Client, attemptID string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if id := agentOf(t, cli, attemptID); id != "" {
			// The engine lists a container while its create is still in
			// flight, when an inspect of it may answer "no such
			// container" (seen under load): not running yet.
			st, err := tryInspect(cli, id)
			if err == nil && st.Running {
				return id
			}
			if err != nil && !cerrdefs.IsNotFound(err) {
				t.Fatalf("inspect container %s: %v", short(id), err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no running agent container for attempt %s", attemptID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func inspect(t *testing.T, cli *client.Client, id string) *container.State {
	t.Helper()
	st, err := tryInspect(cli, id)
	if err != nil {
		t.Fatalf("inspect container %s: %v", short(id), err)
	}
	return st
}

func tryInspect(cli *client.Client, id string) (*container.State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	return res.Container.State, nil
}

func running(t *testing.T, cli *client.Client, id string) bool {
	return inspect(t, cli, id).Running
}

func startedAt(t *testing.T, cli *client.Client, id string) string {
	return inspect(t, cli, id).StartedAt
}

// ownedBy lists every object whose runner label is token.
func ownedBy(t *testing.T, cli *client.Client, token string) []string {
	t.Helper()
	return objectsLabelled(t, cli, "io.codeboost.runner="+token)
}

// noAttemptObjects fails the test if any object made for the attempt is
// left: by, what was to remove them. Another attempt of the same runner
// (a requeue's) may run meanwhile.
func noAttemptObjects(t *testing.T, cli *client.Client, attemptID, by string) {
	t.Helper()
	if left := objectsLabelled(t, cli, "io.codeboost.attempt="+attemptID); len(left) > 0 {
		t.Fatalf("%s left the objects of attempt %s: %v", by, attemptID, left)
	}
}

// objectsLabelled lists, sorted, every container, volume and network that
// matches the label filter ("key" or "key=value"): "container <name>
// <id>", "volume <name>", "network <name> <id>".
func objectsLabelled(t *testing.T, cli *client.Client, label string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := client.Filters{}.Add("label", label)
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	// What was on the engine before this test took the Docker lock is
	// another run's (dockertest.Preexisting), never this test's.
	for _, c := range cs.Items {
		if !dockertest.Preexisting("container " + c.ID) {
			out = append(out, "container "+strings.TrimPrefix(c.Names[0], "/")+" "+c.ID)
		}
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Items {
		if !dockertest.Preexisting("volume " + v.Name) {
			out = append(out, "volume "+v.Name)
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		if !dockertest.Preexisting("network " + n.ID) {
			out = append(out, "network "+n.Name+" "+n.ID)
		}
	}
	sort.Strings(out)
	return out
}

// storageOf keeps task storage's parts (keeper, volumes) of an ownedBy list.
func storageOf(objs []string) []string {
	var out []string
	for _, o := range objs {
		if strings.HasPrefix(o, "volume ") || strings.HasPrefix(o, "container codeboost-keeper-") {
			out = append(out, o)
		}
	}
	return out
}

// labelledWithValue lists the objects with any label whose value contains
// s.
func labelledWithValue(t *testing.T, cli *client.Client, s string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	has := func(labels map[string]string) bool {
		for _, v := range labels {
			if strings.Contains(v, s) {
				return true
			}
		}
		return false
	}
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Items {
		if has(c.Labels) {
			out = append(out, "container "+c.ID)
		}
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Items {
		if has(v.Labels) {
			out = append(out, "volume "+v.Name)
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		if has(n.Labels) {
			out = append(out, "network "+n.Name)
		}
	}
	return out
}

// codeboostEvents are the engine's events between from and to about an
// object with a codeboost label or name (containers carry their labels as
// attributes; volumes and images are named codeboost-…).
func codeboostEvents(t *testing.T, cli *client.Client, from, to time.Time) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := func(x time.Time) string { return fmt.Sprintf("%d.%09d", x.Unix(), x.Nanosecond()) }
	res := cli.Events(ctx, client.EventsListOptions{Since: ts(from), Until: ts(to.Add(time.Second))})
	var out []string
	for {
		select {
		case m := <-res.Messages:
			ours := strings.Contains(m.Actor.ID, "codeboost")
			for k, v := range m.Actor.Attributes {
				if strings.HasPrefix(k, "io.codeboost.") || strings.Contains(v, "codeboost") {
					ours = true
				}
			}
			if ours {
				out = append(out, fmt.Sprintf("%s %s %s", m.Type, m.Action, m.Actor.ID))
			}
		case err := <-res.Err:
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("engine events: %v", err)
			}
			return out
		}
	}
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// copyDatabase copies the database file and its -wal and -shm files, as
// they are, into dir, and returns the names copied.
func copyDatabase(t *testing.T, db, dir string) []string {
	t.Helper()
	var copied []string
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(db + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(db) + suffix
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		copied = append(copied, name)
	}
	return copied
}

// openDB opens a database file as another writer would (the sqlite3 shell).
func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// setToken stores value as the runner owner token.
func setToken(t *testing.T, path, value string) {
	t.Helper()
	db := openDB(t, path)
	defer db.Close()
	res, err := db.Exec(`UPDATE app_settings SET value = ? WHERE key = 'runner_owner_token'`, value)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%d runner owner tokens updated", n)
	}
}

// tokenOf reads the stored runner owner token.
func tokenOf(t *testing.T, path string) string {
	t.Helper()
	db := openDB(t, path)
	defer db.Close()
	var v string
	if err := db.QueryRow(`SELECT value FROM app_settings WHERE key = 'runner_owner_token'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// dbDump is every row of every table, sorted: two dumps are equal when
// the database holds the same data.
func dbDump(t *testing.T, path string) string {
	t.Helper()
	db := openDB(t, path)
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		var lines []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var parts []string
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				parts = append(parts, fmt.Sprintf("%s=%v", cols[i], v))
			}
			lines = append(lines, strings.Join(parts, " "))
		}
		rows.Close()
		sort.Strings(lines)
		fmt.Fprintf(&b, "%s:\n", table)
		for _, l := range lines {
			fmt.Fprintf(&b, "\t%s\n", l)
		}
	}
	return b.String()
}

// faultProxy is an engine endpoint on a unix socket that forwards every
// request to the real engine except those fail picks, which get a 500.
type faultProxy struct {
	path   string
	failed atomic.Int32
}

func startFaultProxy(t *testing.T, daemonHost string, fail func(*http.Request) bool) *faultProxy {
	t.Helper()
	network, addr, ok := strings.Cut(daemonHost, "://")
	if !ok || (network != "unix" && network != "tcp") {
		t.Skipf("the fault proxy speaks to unix or tcp engines, not %s", daemonHost)
	}
	// A short directory: a unix socket's path has a length limit.
	dir, err := os.MkdirTemp("", "cb-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &faultProxy{path: filepath.Join(dir, "engine.sock")}
	l, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	var dialer net.Dialer
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker"
			r.Out.Host = "docker"
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		}},
		FlushInterval: -1,
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail(r) {
			p.failed.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintln(w, `{"message":"e2e: the engine refuses this removal"}`)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return p
}
