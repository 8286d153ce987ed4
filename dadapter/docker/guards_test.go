package docker

// Engineless tests of the adapter's input guards that the Docker suite
// never reached (found by its coverage profile: a guard no test reaches is
// one any mutation of it survives). Each refusal must come before any
// engine call, say what it refused, and change nothing.

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/dtest"
)

// TestAgentProfileRefusesANegativeLimit: zero is "D's default" for every
// limit of a profile, so a zero is taken and anything below it refused.
func TestAgentProfileRefusesANegativeLimit(t *testing.T) {
	if err := checkProfile(dadapter.AgentProfile{Image: "agent"}); err != nil {
		t.Fatalf("a profile with every limit zero (D's defaults): %v", err)
	}
	for name, set := range map[string]func(*dadapter.AgentProfile){
		"memory":       func(p *dadapter.AgentProfile) { p.MemoryBytes = -1 },
		"CPUs":         func(p *dadapter.AgentProfile) { p.NanoCPUs = -1 },
		"PIDs":         func(p *dadapter.AgentProfile) { p.PIDs = -1 },
		"output limit": func(p *dadapter.AgentProfile) { p.OutputLimit = -1 },
	} {
		p := dadapter.AgentProfile{Image: "agent"}
		set(&p)
		if err := checkProfile(p); err == nil || err.Error() != "the agent profile has a negative limit" {
			t.Errorf("a negative %s: %v, want it refused as a negative limit", name, err)
		}
	}
}

// TestOwnerLabelsAreCheckedEachOnItsOwn: each of the three owner IDs is
// checked, and the refusal names the one that is wrong.
func TestOwnerLabelsAreCheckedEachOnItsOwn(t *testing.T) {
	good := newOwner(dtest.NewToken())
	if err := checkOwner(good); err != nil {
		t.Fatalf("a well-formed owner: %v", err)
	}
	for want, set := range map[string]func(*dadapter.StorageOwner){
		"runner owner":  func(o *dadapter.StorageOwner) { o.RunnerOwner = strings.ToUpper(o.RunnerOwner) },
		"attempt ID":    func(o *dadapter.StorageOwner) { o.AttemptID = "../x" },
		"allocation ID": func(o *dadapter.StorageOwner) { o.AllocationID = o.AllocationID + "x" },
	} {
		o := good
		set(&o)
		if err := checkOwner(o); err == nil || !strings.HasPrefix(err.Error(), want+" ") {
			t.Errorf("a bad %s: %v, want a refusal naming it", want, err)
		}
	}
}

// TestNewNeedsItsThreeRequiredOptions: a client, a runner root and a
// helper image; each missing one is named. An agent user that is not
// numeric is refused there too, not at each allocation's seed.
func TestNewNeedsItsThreeRequiredOptions(t *testing.T) {
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the engine was asked %s %s", r.Method, r.URL.Path)
	})
	full := Options{Client: cli, RunnerRoot: t.TempDir(), HelperImage: "helper"}
	if _, err := New(full); err != nil {
		t.Fatalf("New with every required option: %v", err)
	}
	for want, clear := range map[string]func(*Options){
		"Options.Client":      func(o *Options) { o.Client = nil },
		"Options.RunnerRoot":  func(o *Options) { o.RunnerRoot = "" },
		"Options.HelperImage": func(o *Options) { o.HelperImage = "" },
	} {
		o := full
		clear(&o)
		if _, err := New(o); err == nil || err.Error() != "docker: "+want+" is required" {
			t.Errorf("New without %s: %v", want, err)
		}
	}
	// The agent's user is taken only as numeric uid:gid, which the seed
	// writes the work tree as.
	for _, user := range []string{"agent", "1000", "1000:", "-1:0", "1000:users"} {
		o := full
		o.AgentUser = user
		if _, err := New(o); err == nil || !strings.HasPrefix(err.Error(), "docker: Options.AgentUser: ") {
			t.Errorf("New with agent user %q: %v", user, err)
		}
	}
}

// TestBundleBytesIsTheLimitWithRoom: a commit's bundle may hold its files
// (the commit limit), a 64th more and 16 MiB for git's own data; a limit
// past what memory could hold is cut to that.
func TestBundleBytesIsTheLimitWithRoom(t *testing.T) {
	for _, c := range []struct {
		limit int64
		want  int
	}{
		{0, 16 << 20},
		{64 << 20, 64<<20 + 1<<20 + 16<<20},
		{math.MaxInt32 << 8, math.MaxInt32<<8 + math.MaxInt32<<2 + 16<<20},
		{math.MaxInt64, math.MaxInt32<<8 + math.MaxInt32<<2 + 16<<20},
	} {
		if got := bundleBytes(c.limit); got != c.want {
			t.Errorf("bundleBytes(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

// TestReleaseAndRemoveRefuseStorageNotTheirs: ReleaseTaskCommit and
// RemoveTaskFilesystems refuse what is not this adapter's task storage,
// and removal refuses a handle of an allocation this process holds under
// another handle (it would remove what that one still uses), before any
// engine call. ReleaseTaskCommit of storage whose repository is unknown
// (a crash left no keeper to read it from) has nothing to drop, and
// succeeds without looking for one.
func TestReleaseAndRemoveRefuseStorageNotTheirs(t *testing.T) {
	d, _ := noEngineAdapter(t)
	var none *storage
	for name, fs := range map[string]dadapter.TaskFilesystems{"no storage": nil, "a nil handle": none} {
		if err := answeredErr(t, "ReleaseTaskCommit", func(done func(error)) { d.ReleaseTaskCommit(fs, done) }); err == nil ||
			!strings.Contains(err.Error(), "not the Docker adapter's task storage") {
			t.Errorf("ReleaseTaskCommit of %s: %v", name, err)
		}
		if err := answeredErr(t, "RemoveTaskFilesystems", func(done func(error)) { d.RemoveTaskFilesystems(fs, done) }); !errors.Is(err, ErrNotHeld) ||
			!strings.Contains(err.Error(), "not the Docker adapter's task storage") {
			t.Errorf("RemoveTaskFilesystems of %s: %v", name, err)
		}
	}
	if err := answeredErr(t, "ReleaseTaskCommit", func(done func(error)) { d.ReleaseTaskCommit(&storage{owner: newOwner(dtest.NewToken())}, done) }); err != nil {
		t.Errorf("ReleaseTaskCommit of storage with no repository: %v, want nothing to drop", err)
	}

	owner := newOwner(dtest.NewToken())
	held := &storage{owner: owner, keeper: "keeper-id"}
	d.mu.Lock()
	d.held[owner.AllocationID] = held
	d.mu.Unlock()
	other := &storage{owner: owner, keeper: "another-keeper-id"}
	err := answeredErr(t, "RemoveTaskFilesystems", func(done func(error)) { d.RemoveTaskFilesystems(other, done) })
	if !errors.Is(err, ErrNotHeld) || !strings.Contains(err.Error(), "held by another handle") {
		t.Errorf("removing an allocation held under another handle: %v", err)
	}
	d.mu.Lock()
	if d.held[owner.AllocationID] != held {
		t.Errorf("the refused removal changed what is held")
	}
	d.mu.Unlock()

	// A removal the engine does not carry out fails, saying what is left,
	// and the storage stays held: its removal may be asked again.
	d.opt.CleanupWindow, d.opt.CleanupRetry = 100*time.Millisecond, 20*time.Millisecond
	err = answeredErr(t, "RemoveTaskFilesystems", func(done func(error)) { d.RemoveTaskFilesystems(held, done) })
	if err == nil || !strings.Contains(err.Error(), "keeper "+objectName(KindKeeper, owner.AllocationID)+" left behind") {
		t.Errorf("a removal with no engine to carry it out: %v", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held[owner.AllocationID] != held {
		t.Errorf("storage whose removal failed is no longer held")
	}
}

// TestRecoveryRefusesABadOwnerAndAnAllocationHeldElsewhere: recovery
// takes only a well-formed runner owner; and it issues no handle for an
// allocation this process already holds under another runner, issuing
// none of its handles then.
func TestRecoveryRefusesABadOwnerAndAnAllocationHeldElsewhere(t *testing.T) {
	d, _ := noEngineAdapter(t)
	if _, err := d.recoverLeftovers(context.Background(), "NOT-A-TOKEN"); err == nil || !strings.Contains(err.Error(), "is not 32 lowercase hex") {
		t.Errorf("recovery for a malformed owner: %v", err)
	}
	owner, elsewhere := dtest.NewToken(), newOwner(dtest.NewToken())
	d.mu.Lock()
	d.held[elsewhere.AllocationID] = &storage{owner: elsewhere}
	d.mu.Unlock()
	mine := newOwner(owner)
	clash := elsewhere
	clash.RunnerOwner = owner
	err := d.hold(owner, []*storage{{owner: mine}, {owner: clash}})
	if err == nil || !strings.Contains(err.Error(), "held by this process under another runner") {
		t.Fatalf("hold of an allocation held under another runner: %v", err)
	}
	d.mu.Lock()
	if d.held[mine.AllocationID] != nil || d.held[elsewhere.AllocationID].owner != elsewhere {
		t.Errorf("the refused hold issued handles: %v", d.held)
	}
	d.mu.Unlock()
	if err := d.hold(owner, []*storage{{owner: mine}}); err != nil {
		t.Fatalf("hold of an allocation nobody holds: %v", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held[mine.AllocationID] == nil {
		t.Errorf("the hold issued no handle")
	}
}

// TestStorageNamesBothVolumesBeforeAContainerMountsThem: a storage handle
// without the name of one of its volumes is refused before the engine is
// asked about the other.
func TestStorageNamesBothVolumesBeforeAContainerMountsThem(t *testing.T) {
	d, _ := noEngineAdapter(t)
	owner := newOwner(dtest.NewToken())
	err := d.checkVolumes(context.Background(), &storage{owner: owner, meta: objectName(KindMeta, owner.AllocationID)})
	if err == nil || err.Error() != "task storage "+owner.AllocationID+" has no task-work volume" {
		t.Errorf("checkVolumes of storage with no work volume: %v", err)
	}
}

// TestSourceCommitMustBeAFullID: an allocation and a clone take a source
// commit only as 40 lowercase hex digits (or none: the repository's
// HEAD), refused before anything is made.
func TestSourceCommitMustBeAFullID(t *testing.T) {
	d, root := noEngineAdapter(t)
	repo, head := userRepo(t)
	for _, commit := range []string{head[:12], strings.ToUpper(head), "HEAD", head + "0"} {
		src := dadapter.Source{Repository: repo, Commit: commit}
		if _, err := d.allocate(context.Background(), newOwner(dtest.NewToken()), src, nil); err == nil || !strings.Contains(err.Error(), "is not 40 lowercase hex digits") {
			t.Errorf("allocate from commit %q: %v", commit, err)
		}
		runner := filepath.Join(root, dtest.NewToken())
		if _, err := d.clone(context.Background(), filepath.Join(runner, "attempts", dtest.NewID()), src, nil); err == nil || !strings.Contains(err.Error(), "is not 40 lowercase hex digits") {
			t.Errorf("clone of commit %q: %v", commit, err)
		}
		if _, err := os.Stat(runner); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the refused clone of %q made the runner's directory (%v): not even the runner-owned repository is made", commit, err)
		}
	}
}

// TestTailKeepsTheLastBytes: where a failing program says why is at the
// end of what it wrote.
func TestTailKeepsTheLastBytes(t *testing.T) {
	tl := &tail{limit: 4}
	for _, c := range []struct{ write, want string }{{"ab", "ab"}, {"cdef", "cdef"}, {"gh", "efgh"}, {"ijklmn", "klmn"}} {
		if n, err := tl.Write([]byte(c.write)); n != len(c.write) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", c.write, n, err)
		}
		if string(tl.buf) != c.want {
			t.Errorf("after %q the tail holds %q, want %q", c.write, tl.buf, c.want)
		}
	}
}

// TestCloneFailsWithTheHostsReason: a task clone whose runner-owned
// repository cannot be made, or whose source has no commit to clone,
// fails with that step's words and makes no clone directory.
func TestCloneFailsWithTheHostsReason(t *testing.T) {
	d, root := noEngineAdapter(t)
	unborn := t.TempDir()
	git(t, unborn, "init", "-q", "-b", "main")
	repo, _ := userRepo(t)
	for _, c := range []struct {
		name, repo string
		block      bool // a file where the runner's repositories go
		want       string
	}{
		{"no runner-owned repository", repo, true, "/repositories is not a directory"},
		{"no commit", unborn, false, "gitrepo: read HEAD of " + unborn},
	} {
		runner := filepath.Join(root, dtest.NewToken())
		parent := filepath.Join(runner, "attempts", dtest.NewID())
		if err := os.MkdirAll(parent, 0o700); err != nil {
			t.Fatal(err)
		}
		if c.block {
			if err := os.WriteFile(filepath.Join(runner, "repositories"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cl, err := clone(t, context.Background(), d, parent, dadapter.Source{Repository: c.repo}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: clone %+v, %v; want it failed with %q", c.name, cl, err, c.want)
		}
		if left, _ := os.ReadDir(parent); len(left) > 0 {
			t.Errorf("%s: the failed clone left %v", c.name, left)
		}
	}
}

// TestOpenSaysWhyThereIsNoEngine: an engine address the client cannot
// parse, and a socket where nothing answers, each stop Open with words
// that name the cause (and the address). Neither reaches past this host:
// an address with a host name would be looked up in DNS.
func TestOpenSaysWhyThereIsNoEngine(t *testing.T) {
	for host, want := range map[string]string{
		"nonsense": "the Docker client: ",
		"unix:///nonexistent/codeboost-no-engine.sock": "the Docker engine at unix:///nonexistent/codeboost-no-engine.sock does not answer: ",
	} {
		t.Setenv("DOCKER_HOST", host)
		if d, err := Open(context.Background(), Options{RunnerRoot: t.TempDir()}); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Open with DOCKER_HOST=%s: %v, %v; want %q", host, d, err, want)
		}
	}
}

// TestBundleRefReadsOnlyAWholeV2Header: output that is not a v2 bundle
// (none at all, another version) and a header cut before its end (the
// container stopped writing) are refused; a cut header is never read as
// the refs it got to.
func TestBundleRefReadsOnlyAWholeV2Header(t *testing.T) {
	base, work := strings.Repeat("b", 40), strings.Repeat("c", 40)
	header := "-" + base + " the base\n" + work + " refs/heads/work\n"
	for name, c := range map[string]struct{ bundle, want string }{
		"no output":    {"", "is not a v2 git bundle"},
		"version 3":    {"# v3 git bundle\n" + header + "\nPACK", "is not a v2 git bundle"},
		"a cut header": {"# v2 git bundle\n" + header, "has no end to its header"},
		"a cut ref":    {"# v2 git bundle\n-" + base + " the base\n" + work, "has no end to its header"},
	} {
		if got, err := bundleRef([]byte(c.bundle), base); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, c.want)
		}
	}
}

// TestStagedMetadataHoldsOnlyFilesAndDirectories: a staged git directory
// holding a link or a socket (staging writes neither) is refused by the
// metadata baseline and by the seed's walk alike, naming the entry; logs/
// and hooks/ are left out whatever they hold.
func TestStagedMetadataHoldsOnlyFilesAndDirectories(t *testing.T) {
	for name, plant := range map[string]func(dir string) error{
		"a link": func(dir string) error { return os.Symlink("/etc/passwd", filepath.Join(dir, "odd")) },
		"a socket": func(dir string) error {
			l, err := net.Listen("unix", filepath.Join(dir, "odd"))
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return err
		},
	} {
		dir := t.TempDir()
		for _, sub := range []string{"objects", "logs", "hooks"} {
			if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// What logs/ and hooks/ hold is never looked at: their links
		// would be refused.
		for _, sub := range []string{"logs", "hooks"} {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, sub, "skipped")); err != nil {
				t.Fatal(err)
			}
		}
		if b, err := metadataBaseline(dir); err != nil || !strings.HasPrefix(b, "sha256:") {
			t.Fatalf("%s: the baseline of a clean directory: %q, %v", name, b, err)
		}
		if err := plant(dir); err != nil {
			t.Fatal(err)
		}
		if b, err := metadataBaseline(dir); err == nil || err.Error() != "metadata baseline: odd in the clone's metadata is not a regular file" {
			t.Errorf("%s: metadataBaseline = %q, %v", name, b, err)
		}
		if err := metaEntries(tar.NewWriter(io.Discard), dir, "meta/"); err == nil || !strings.Contains(err.Error(), "odd in the clone's metadata is not a regular file") {
			t.Errorf("%s: metaEntries = %v", name, err)
		}
	}
}
