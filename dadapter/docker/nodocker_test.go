package docker

// The tests of this file need no Docker engine: they call the adapter's
// pure parts (the clone's parent check, the bundle header, the recovery
// plan, the host configuration) or give it a fake engine on a socket of
// their own.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/dtest"
	"github.com/codeboost/codeboost/dadapter/gitrepo"
	"github.com/codeboost/codeboost/words"
)

// TestCloneParentMustLieUnderTheRunnersDirectory guards CreateTaskClone's
// one source of the runner owner: the contract gives the call none, so it
// is read from the parent, which must lie under <RunnerRoot>/<owner>/. The
// runner's own directory is not under itself: a clone there would be made
// beside the runner's repositories and attempt directories, in a place
// whose removal no attempt owns, so it is refused like a parent outside
// the runner root, before anything is written (not even the runner-owned
// repository) and before any engine call (the D's engine does not exist).
// Every refusal is the parent check's, naming the parent, not a later
// step's complaint about a path it was never meant to see.
// Sweep survivor (seed 31337): dadapter/docker/clone.go:D.runnerOf:drop-guard:c796c398.
func TestCloneParentMustLieUnderTheRunnersDirectory(t *testing.T) {
	d, root := noEngineAdapter(t)
	repo, head := userRepo(t)
	runner := dtest.NewToken()
	for name, parent := range map[string]string{
		"the runner's own directory": filepath.Join(root, runner),
		"the runner root":            root,
		"outside the runner root":    t.TempDir(),
		"not a runner's directory":   filepath.Join(root, "attempts", dtest.NewID()),
		"a relative path":            filepath.Join(runner, "attempts", dtest.NewID()),
	} {
		t.Run(name, func(t *testing.T) {
			if filepath.IsAbs(parent) {
				if err := os.MkdirAll(parent, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			c, err := clone(t, context.Background(), d, parent, dadapter.Source{Repository: repo, Commit: head}, nil)
			if err == nil {
				t.Fatalf("a clone under %s was made: %+v", parent, c)
			}
			if !strings.Contains(err.Error(), "is not under "+root+"/<runner owner>/") || !strings.Contains(err.Error(), parent) {
				t.Errorf("the refusal says %q, want the parent check's, naming %s", err, parent)
			}
		})
	}
	if entries, err := os.ReadDir(filepath.Join(root, runner)); err != nil || len(entries) > 0 {
		t.Errorf("the refused clones left %v in the runner's directory (%v)", entries, err)
	}
}

// TestBundleRefTakesOnlyOneCommitOnTheBase: the commit container's bundle
// is the agent's work as one commit on the attempt's base, and the header
// is all F trusts of it before fetching: exactly one ref, exactly one
// prerequisite, and that prerequisite the base. A bundle with a second
// ref (a branch the agent made), no prerequisite (a whole history) or
// another base (work on a commit the attempt was not given) is refused
// before the runner-owned repository fetches it. No Docker is needed: the
// header is parsed from bytes.
// Sweep survivor (seed 8675309): dadapter/docker/commit.go:bundleRef:drop-guard:fe84e251.
func TestBundleRefTakesOnlyOneCommitOnTheBase(t *testing.T) {
	base := strings.Repeat("b", 40)
	work := strings.Repeat("c", 40)
	other := strings.Repeat("d", 40)
	bundle := func(header ...string) []byte {
		return []byte("# v2 git bundle\n" + strings.Join(header, "\n") + "\n\nPACK")
	}
	got, err := bundleRef(bundle("-"+base+" the base", work+" refs/heads/work"), base)
	if err != nil || got != work {
		t.Fatalf("one ref on the base: %q, %v; want %s", got, err, work)
	}
	for name, b := range map[string][]byte{
		"two refs":             bundle("-"+base+" the base", work+" refs/heads/work", other+" refs/heads/more"),
		"no ref":               bundle("-" + base + " the base"),
		"no prerequisite":      bundle(work + " refs/heads/work"),
		"two prerequisites":    bundle("-"+base+" the base", "-"+other+" another", work+" refs/heads/work"),
		"another prerequisite": bundle("-"+other+" another", work+" refs/heads/work"),
	} {
		if got, err := bundleRef(b, base); err == nil || !strings.Contains(err.Error(), "want one ref on "+base) {
			t.Errorf("%s: %q, %v; want the header refused", name, got, err)
		}
	}
}

// TestBundleRefTakesOnlyACommitID: the one ref's object must be a full
// commit ID; a header whose ref names something else (a truncated or
// forged name) is refused before the runner-owned repository fetches
// anything under it. No Docker is needed.
// Sweep survivor (seed 271828): dadapter/docker/commit.go:bundleRef:drop-guard:4d25bea6.
func TestBundleRefTakesOnlyACommitID(t *testing.T) {
	base := strings.Repeat("b", 40)
	for _, name := range []string{"cccc", strings.Repeat("C", 40), strings.Repeat("g", 40), "HEAD"} {
		b := []byte("# v2 git bundle\n-" + base + " the base\n" + name + " refs/heads/work\n\nPACK")
		if got, err := bundleRef(b, base); err == nil || !strings.Contains(err.Error(), "not a commit ID") {
			t.Errorf("ref object %q: %q, %v; want it refused as not a commit ID", name, got, err)
		}
	}
}

// TestRecoveryRemovesNetworksLast: the engine refuses to remove a network
// a container is still attached to, so recovery's removal plan lists every
// leftover container before any network, whatever their names (here the
// network's name sorts first). By name alone, the network's removal would
// fail while the agent container that uses it is still there, and recovery
// would report a leftover it was about to remove. No Docker is needed: the
// plan is made from an inventory.
// Sweep survivor (seed 8675309): dadapter/docker/recover.go:removalOrder:drop-guard:c2a55802.
func TestRecoveryRemovesNetworksLast(t *testing.T) {
	owner := newOwner(dtest.NewToken())
	inventory := []object{
		{kind: dadapter.KindContainer, id: "c2", name: "codeboost-seeder-2", labels: ownerLabels(owner, KindSeeder)},
		{kind: dadapter.KindNetwork, id: "n1", name: "a-codeboost-network", labels: ownerLabels(owner, KindNetwork)},
		{kind: dadapter.KindContainer, id: "c1", name: "codeboost-agent-1", labels: ownerLabels(owner, KindAgent)},
	}
	p := classify(inventory, owner.RunnerOwner)
	var got []string
	for _, o := range p.remove {
		got = append(got, o.id)
	}
	if len(got) != 3 || got[0] != "c1" || got[1] != "c2" || got[2] != "n1" {
		t.Fatalf("recovery removes %v, want the containers by name, then the network: [c1 c2 n1]", got)
	}
	if len(p.unowned) != 0 || len(p.storage) != 0 {
		t.Fatalf("unowned %v, storage %v; want every object removed", p.unowned, p.storage)
	}
}

// TestLockedDownGivesNoTmpfsWhenAskedForNone: a container D starts with
// no /tmp asked for (tmpfsBytes 0) gets none. A tmpfs of size 0 is one
// with no size limit at all, so "none" must mean no mount, never size=0.
// Sweep survivor (seed 8675309): dadapter/docker/containers.go:lockedDown:boundary:ba29b4bb.
func TestLockedDownGivesNoTmpfsWhenAskedForNone(t *testing.T) {
	if hc := lockedDown(0); len(hc.Tmpfs) != 0 {
		t.Fatalf("lockedDown(0) mounts %v, want no tmpfs", hc.Tmpfs)
	}
	if hc := lockedDown(1 << 20); hc.Tmpfs["/tmp"] != "rw,nosuid,nodev,size=1048576" {
		t.Fatalf("lockedDown(1 MiB) mounts %v", hc.Tmpfs)
	}
}

// fakeEngine serves h as a Docker engine on a unix socket of the test's
// own and returns a client for it: the engine's answers are the test's,
// and no Docker is needed. Every answer says API 1.41, as engine 20.10.
func fakeEngine(t *testing.T, h http.HandlerFunc) (host string, cli *client.Client) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "engine.sock"))
	if err != nil {
		t.Fatal(err)
	}
	engine := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			w.Write([]byte("OK"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		h(w, r)
	}))
	engine.Listener.Close()
	engine.Listener = ln
	engine.Start()
	t.Cleanup(engine.Close)
	host = "unix://" + ln.Addr().String()
	cli, err = client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return host, cli
}

// adapterOn is an adapter on cli with a runner root of root, for a test
// whose engine is fake or absent: its helper image is never asked for.
func adapterOn(t *testing.T, cli *client.Client, root string) *D {
	t.Helper()
	d, err := New(Options{Client: cli, RunnerRoot: root, HelperImage: "codeboost-helper:none"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestOpenSaysWhyTheHelperImageCannotBeMade: an engine that answers its
// ping but cannot give the helper image (a full disk, a storage driver
// that fails) stops Open with the image's own error, "the helper image:"
// and the engine's words, so the person starting codeboost reads what to
// fix, not a configuration error about an empty helper image name that
// nobody configured. The fake engine answers the ping and fails
// everything else.
// Sweep survivor (seed 8675309): dadapter/docker/open.go:Open:ignore-error:31d5f59c~2.
func TestOpenSaysWhyTheHelperImageCannotBeMade(t *testing.T) {
	host, _ := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"message":"write /var/lib/docker/tmp: no space left on device"}`))
	})
	t.Setenv("DOCKER_HOST", host)
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_API_VERSION", "")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := Open(ctx, Options{RunnerRoot: t.TempDir()})
	if err == nil {
		d.Close()
		t.Fatal("Open succeeded with an engine that cannot give the helper image")
	}
	if !strings.HasPrefix(err.Error(), "the helper image: ") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Open = %v, want the helper image's own error with the engine's words", err)
	}
}

// TestRecoveryRefusedWhenStorageIsAllocatedDuringIt: recovery checks, as
// it starts, that this process holds nothing of the runner's, and again,
// under the lock, as it issues the recovered handles: task storage of the
// runner allocated while it listed the engine (here, as the engine
// answers the container list) means that the runner is not a crashed
// one, and recovery is refused, issuing no handle, rather than handing
// back leftovers beside live storage.
// Sweep survivor (seed 8675309): dadapter/docker/recover.go:D.recoverLeftovers:ignore-error:873c21e2.
func TestRecoveryRefusedWhenStorageIsAllocatedDuringIt(t *testing.T) {
	owner := dtest.NewToken()
	var d *D
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/containers/json"):
			live := &storage{owner: newOwner(owner)}
			d.mu.Lock()
			d.held[live.owner.AllocationID] = live
			d.mu.Unlock()
			w.Write([]byte(`[]`))
		case strings.HasSuffix(r.URL.Path, "/volumes"):
			w.Write([]byte(`{"Volumes":[],"Warnings":null}`))
		case strings.HasSuffix(r.URL.Path, "/networks"):
			w.Write([]byte(`[]`))
		default:
			w.WriteHeader(http.StatusNotImplemented)
			w.Write([]byte(`{"message":"not in this test"}`))
		}
	})
	d = adapterOn(t, cli, t.TempDir())
	r, err := recoverWith(t, d, owner)
	if err == nil || !strings.Contains(err.Error(), "holds task storage") || len(r.Storage) > 0 {
		t.Fatalf("recovery while storage was allocated during it: %+v, %v; want a refusal and no handle", r, err)
	}
}

// TestBoundKeepsADiagnosticOfExactlyTheBound: a diagnostic of exactly
// maxDiagnostic bytes is kept whole; only a longer one is cut, on a rune
// boundary, with "…" in the bytes it gives up.
// Sweep survivor (seed 8675309): dadapter/docker/start.go:bound:boundary:f7076859.
func TestBoundKeepsADiagnosticOfExactlyTheBound(t *testing.T) {
	exact := strings.Repeat("a", maxDiagnostic)
	if got := bound(exact); got != exact {
		t.Fatalf("bound of %d bytes cut it to %d", len(exact), len(got))
	}
	long := strings.Repeat("é", maxDiagnostic) // two bytes each
	got := bound(long)
	if len(got) > maxDiagnostic || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Fatalf("bound of %d bytes: %d bytes ending %q", len(long), len(got), got[len(got)-8:])
	}
}

// TestCheckVolumesSaysWhyItCannotLook: before a helper container reads
// task storage, both volumes are inspected to prove they are still the
// storage's own. An inspect the engine fails is reported as that failure
// ("inspect volume …" and the engine's words), which is what the
// attempt's diagnostic then shows ("Partial output could not be
// exported: …"); it is never reported as a volume that lost its labels,
// which would tell the person that someone replaced the volume.
// Sweep survivor (seed 8675309): dadapter/docker/storage.go:D.checkVolumes:ignore-error:31d5f59c.
func TestCheckVolumesSaysWhyItCannotLook(t *testing.T) {
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"message":"error while reading the volume's metadata: input/output error"}`))
	})
	d := adapterOn(t, cli, t.TempDir())
	owner := newOwner(dtest.NewToken())
	s := &storage{owner: owner, work: objectName(KindWork, owner.AllocationID), meta: objectName(KindMeta, owner.AllocationID)}
	err := d.checkVolumes(context.Background(), s)
	if err == nil || !strings.HasPrefix(err.Error(), "inspect volume "+s.work+": ") || !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("checkVolumes with an engine that fails the inspect: %v, want the inspect's own error", err)
	}
}

// TestUncleanSaysWhyTheManifestCannotBeRead: the tree check found the work
// tree unclean, but the manifest it wrote does not parse: the refusal says
// why the manifest cannot be read, never "the script named no path", which
// would read as a check that found nothing wrong.
// Sweep mutant (seed 8675309, run after the sweep was stopped):
// dadapter/docker/tree.go:unclean:ignore-error:31d5f59c.
func TestUncleanSaysWhyTheManifestCannotBeRead(t *testing.T) {
	stdout := []byte("not a manifest\n")
	_, perr := parseManifest(stdout)
	if perr == nil {
		t.Fatal("the bad manifest parsed")
	}
	if got := unclean(helperOutput{stdout: stdout}, 1<<20); got != perr.Error() {
		t.Fatalf("unclean of a manifest that does not parse: %q, want its parse error %q", got, perr)
	}
}

// TestWalkMetaFailsOnWhatItCannotRead: the metadata baseline and the seed
// walk the staged metadata; a directory the walk cannot read (here one
// that is not there) fails the walk, never counts as empty metadata, whose
// baseline would later match an agent's deleted .git.
// Sweep mutant (seed 8675309, run after the sweep was stopped):
// dadapter/docker/storage_ops.go:walkMeta:ignore-error:31d5f59c.
func TestWalkMetaFailsOnWhatItCannotRead(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "clone", ".git")
	var seen []string
	err := walkMeta(gone, func(rel string, _ fs.DirEntry) error { seen = append(seen, rel); return nil })
	if !errors.Is(err, fs.ErrNotExist) || len(seen) > 0 {
		t.Fatalf("walkMeta of a missing .git: %v (saw %v), want the walk's own error", err, seen)
	}
}

// TestIsCommitIDTakesOnlyAFullSHA1: the only form of commit D passes to
// git is 40 lowercase hex digits; an abbreviation (which git would expand
// to whatever it matches), a longer string, an empty one or a name is
// not one.
// Sweep mutant (seed 8675309, run after the sweep was stopped):
// dadapter/docker/storage_ops.go:isCommitID:drop-guard:be53ba41.
func TestIsCommitIDTakesOnlyAFullSHA1(t *testing.T) {
	full := strings.Repeat("0123456789abcdef", 3)[:40]
	if !isCommitID(full) {
		t.Errorf("%s is not taken as a commit ID", full)
	}
	for _, s := range []string{"", full[:7], full[:39], full + "0", strings.ToUpper(full), "HEAD", "-" + full[1:]} {
		if isCommitID(s) {
			t.Errorf("%q is taken as a commit ID", s)
		}
	}
}

// TestCheckImageSaysAMissingImageIsNotPulled: codeboost never pulls, so an
// agent image the engine does not have is a startup error that names the
// image and says to load or build it there; an image the engine has
// passes. The fake engine has one image.
// Sweep survivor (seed 271828): dadapter/docker/open.go:D.CheckImage:ignore-error:5615b010.
func TestCheckImageSaysAMissingImageIsNotPulled(t *testing.T) {
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/images/agent:present/json") {
			w.Write([]byte(`{"Id":"sha256:` + strings.Repeat("a", 64) + `","RepoTags":["agent:present"]}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"No such image: agent:absent"}`))
	})
	d := adapterOn(t, cli, t.TempDir())
	if err := d.CheckImage(context.Background(), "agent:present"); err != nil {
		t.Errorf("CheckImage of an image the engine has: %v", err)
	}
	err := d.CheckImage(context.Background(), "agent:absent")
	if err == nil || !strings.Contains(err.Error(), `the image "agent:absent" is not on the Docker engine (codeboost never pulls`) {
		t.Errorf("CheckImage of a missing image: %v; want the error that names it and says codeboost never pulls", err)
	}
}

// TestHelperAbortedWhileStreamingGetsContextsError: F aborts a helper (an
// export past its deadline, a stop) while the container is still writing;
// the attach is closed under the read, and the read's own error (a closed
// connection) must not stand for the abort's: the helper fails with the
// context's error, so F reads an abort as one and not as an engine that
// failed. The fake engine starts the container and then writes nothing,
// until the test aborts.
// Sweep survivor (seed 271828): dadapter/docker/containers.go:D.runHelper:ignore-error:b95b4b32.
func TestHelperAbortedWhileStreamingGetsContextsError(t *testing.T) {
	started := make(chan struct{})
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	ctx, abort := context.WithCancel(context.Background())
	defer abort()
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/containers/c1/attach"):
			attached(t, w, func(conn net.Conn) {
				// Once the container started, it writes 8 MiB of standard
				// output, more than any socket buffers: when the writes
				// have returned, the helper is reading its stream, past
				// the start. Then F aborts, with the stream still open.
				<-started
				frame := append([]byte{1, 0, 0, 0, 0, 0, 0x40, 0}, make([]byte, 0x4000)...)
				for range 512 {
					if _, err := conn.Write(frame); err != nil {
						return
					}
				}
				abort()
				<-held
			})
		default:
			helperEngine(w, r, started)
		}
	})
	d := adapterOn(t, cli, t.TempDir())
	s := &storage{owner: newOwner(strings.Repeat("a", 32)), work: "w", meta: "m"}
	_, err := d.runHelper(ctx, s, helperRun{kind: KindExport, stdoutLimit: 1 << 10})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("runHelper aborted while the container streamed: %v; want the context's error", err)
	}
}

// attached answers a container attach as the engine does (101, then the
// raw multiplexed stream) and hands the connection to stream, on its own
// goroutine, which closes it when stream returns.
func attached(t *testing.T, w http.ResponseWriter, stream func(conn net.Conn)) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	buf.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	buf.Flush()
	go func() {
		defer conn.Close()
		stream(conn)
	}()
}

// helperEngine is the rest of a helper container's life on a fake engine:
// the create (as c1), the start (closing started) and the removal.
func helperEngine(w http.ResponseWriter, r *http.Request, started chan struct{}) {
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/containers/create"):
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"Id":"c1","Warnings":[]}`))
	case strings.HasSuffix(r.URL.Path, "/containers/c1/start"):
		w.WriteHeader(http.StatusNoContent)
		close(started)
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"not in this fake"}`))
	}
}

// TestHelperWhoseStreamBreaksFails: a helper's standard output is what F
// trusts (a diff, a bundle, a tree listing), so a stream that breaks in
// the middle of a frame fails the helper, even when the container then
// reports exit 0: its output is not whole. The fake engine cuts the
// stream inside a frame and answers the wait with 0.
// Sweep survivor (seed 271828): dadapter/docker/containers.go:D.runHelper:ignore-error:b95b4b32.
func TestHelperWhoseStreamBreaksFails(t *testing.T) {
	started := make(chan struct{})
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/containers/c1/attach"):
			attached(t, w, func(conn net.Conn) {
				<-started
				// A frame that announces 100 bytes of standard output and
				// carries 10.
				conn.Write(append([]byte{1, 0, 0, 0, 0, 0, 0, 100}, "diff --git"...))
			})
		case strings.HasSuffix(r.URL.Path, "/containers/c1/wait"):
			w.Write([]byte(`{"StatusCode":0}`))
		default:
			helperEngine(w, r, started)
		}
	})
	d := adapterOn(t, cli, t.TempDir())
	s := &storage{owner: newOwner(strings.Repeat("a", 32)), work: "w", meta: "m"}
	out, err := d.runHelper(context.Background(), s, helperRun{kind: KindExport, stdoutLimit: 1 << 10})
	if err == nil || !strings.Contains(err.Error(), "read the export container's output") {
		t.Fatalf("runHelper over a broken stream = %q, %v; want the read's error", out.stdout, err)
	}
}

// TestWholeEndsOnlyBetweenFrames: the attach stream's frames (an 8-byte
// header whose last four bytes are the payload's size, then the payload)
// may end only between two frames; read whole or a byte at a time, a clean
// end is io.EOF and an end inside a header or a payload is
// io.ErrUnexpectedEOF.
func TestWholeEndsOnlyBetweenFrames(t *testing.T) {
	frame := func(stream byte, payload string) string {
		n := len(payload)
		return string([]byte{stream, 0, 0, 0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}) + payload
	}
	two := frame(1, "diff --git a/x b/x\n") + frame(2, "") + frame(2, "warning\n")
	for _, c := range []struct {
		name   string
		stream string
		want   error
	}{
		{"empty", "", nil},
		{"whole frames", two, nil},
		{"a large payload", frame(1, strings.Repeat("x", 70000)), nil},
		{"a payload past 16 MiB", frame(1, strings.Repeat("x", 1<<24+1)), nil},
		{"cut in a header", two + frame(1, "more")[:5], io.ErrUnexpectedEOF},
		{"cut in a payload", two + frame(1, "more")[:10], io.ErrUnexpectedEOF},
		{"cut in a large payload", frame(1, strings.Repeat("x", 70000))[:60000], io.ErrUnexpectedEOF},
	} {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(c.stream)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			got, err := io.ReadAll(&whole{r: r})
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) || string(got) != c.stream {
				t.Errorf("%s (one byte at a time %v): read %d of %d bytes, %v; want all of them and %v", c.name, oneByte, len(got), len(c.stream), err, c.want)
			}
		}
	}
}

// TestInventoryFailsWhenAListFails: recovery decides what is left over
// from the engine's whole inventory, so a list the engine cannot give (here
// the volumes, between two that it gives) fails the inventory; going on
// would find no task storage to recover and report none. The fake engine
// lists no container and no network.
// Sweep survivor (seed 271828): dadapter/docker/recover.go:D.inventory:ignore-error:31d5f59c~2.
func TestInventoryFailsWhenAListFails(t *testing.T) {
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/volumes"):
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"message":"volume store is locked"}`))
		case strings.HasSuffix(r.URL.Path, "/containers/json"), strings.HasSuffix(r.URL.Path, "/networks"):
			w.Write([]byte(`[]`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"not in this fake"}`))
		}
	})
	d := adapterOn(t, cli, t.TempDir())
	objs, err := d.inventory(context.Background())
	if err == nil || !strings.Contains(err.Error(), "list volumes") {
		t.Fatalf("inventory with the volume list failing = %v, %v; want the list's error", objs, err)
	}
}

// TestReleaseTaskCommitSaysWhoseCommitItCouldNotDrop: the runner traces a
// failed release and goes on ("garbage in the runner-owned repository, not
// a hazard"), so the error is all a person reads of it: it names the
// attempt whose commit ref is left. Here the runner-owned repository
// cannot be opened: its runner root is a file.
// Sweep survivor (seed 271828): dadapter/docker/release.go:D.ReleaseTaskCommit:ignore-error:31d5f59c.
func TestReleaseTaskCommitSaysWhoseCommitItCouldNotDrop(t *testing.T) {
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
	root := filepath.Join(t.TempDir(), "root")
	if err := os.WriteFile(root, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d := adapterOn(t, cli, root)
	s := &storage{owner: newOwner(strings.Repeat("a", 32)), repository: t.TempDir()}
	done := make(chan error, 1)
	d.ReleaseTaskCommit(s, func(err error) { done <- err })
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "docker: release the commit of "+s.owner.AttemptID+": ") {
		t.Fatalf("ReleaseTaskCommit with a runner root that is a file: %v; want the error naming the attempt", err)
	}
}

// TestAgentProfileNeedsAnImage: an agent profile that names no image (or
// only blanks) is refused before anything is made, with its own reason,
// rather than handed to the engine as an empty image name.
// Sweep survivor (seed 271828): dadapter/docker/start.go:checkProfile:drop-guard:65179d35.
func TestAgentProfileNeedsAnImage(t *testing.T) {
	for _, image := range []string{"", "  "} {
		if err := checkProfile(dadapter.AgentProfile{Image: image}); err == nil || err.Error() != "the agent profile names no image" {
			t.Errorf("checkProfile with image %q: %v; want it refused as naming no image", image, err)
		}
	}
	if err := checkProfile(dadapter.AgentProfile{Image: "agent:1"}); err != nil {
		t.Errorf("checkProfile with an image: %v", err)
	}
}

// TestCaptureOfACutStreamStopsTheAgent: the agent's standard output is its
// result, so an attach stream that ends inside a frame has lost output,
// as a failed read has: D stops the agent with capture-failure rather than
// settle with part of a result. A stream that ends between frames is the
// agent's whole output, and stops nothing.
func TestCaptureOfACutStreamStopsTheAgent(t *testing.T) {
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
	d := adapterOn(t, cli, t.TempDir())
	frame := append([]byte{1, 0, 0, 0, 0, 0, 0, 12}, `{"summary":}`...)
	for _, c := range []struct {
		name   string
		stream []byte
		want   words.StopReason
	}{
		{"whole", frame, ""},
		{"cut inside the frame", frame[:14], words.StopCaptureFailure},
	} {
		h := newHandle(d, dadapter.InvocationInput{AttemptID: dtest.NewID(), Deadline: time.Now().Add(time.Hour)}, client.ContainerCreateOptions{})
		newCapture(h).read(bytes.NewReader(c.stream))
		h.deadline.Stop()
		if got, why := h.stopReason(); got != c.want {
			t.Errorf("%s: stop reason %q (%s); want %q", c.name, got, why, c.want)
		}
	}
}

// TestCancelKeepsItsReason: a Cancel carries F's reason to the
// settlement (shutdown stays shutdown), and one without a reason counts
// as cancelled, so that a settlement never reads as an agent that exited
// on its own. No engine call is made.
// Sweep survivor (seed 271828): dadapter/docker/start.go:handle.Cancel:negate:9caa9174.
func TestCancelKeepsItsReason(t *testing.T) {
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
	d := adapterOn(t, cli, t.TempDir())
	for _, c := range []struct{ give, want words.StopReason }{
		{words.StopShutdown, words.StopShutdown},
		{words.StopCancelled, words.StopCancelled},
		{words.StopNone, words.StopCancelled},
	} {
		h := newHandle(d, dadapter.InvocationInput{AttemptID: dtest.NewID(), Deadline: time.Now().Add(time.Hour)}, client.ContainerCreateOptions{})
		h.Cancel(c.give)
		h.deadline.Stop()
		if got, _ := h.stopReason(); got != c.want {
			t.Errorf("Cancel(%q): stop reason %q, want %q", c.give, got, c.want)
		}
	}
}

// TestNumericUserTakesOnlyUidGid: the seed's tar names owners by number,
// so the agent user is "uid:gid" in decimal; root's 0:0 is a number like
// any other, and a name, a lone uid or a negative number is refused.
// Sweep mutant (seed 271828, not run in its sweep):
// dadapter/docker/storage_ops.go:numericUser:boundary:88b8bb78.
func TestNumericUserTakesOnlyUidGid(t *testing.T) {
	for user, want := range map[string][2]int{"1000:1000": {1000, 1000}, "0:0": {0, 0}, "0:5": {0, 5}, "7:0": {7, 0}} {
		if uid, gid, err := numericUser(user); err != nil || uid != want[0] || gid != want[1] {
			t.Errorf("numericUser(%q) = %d, %d, %v; want %v", user, uid, gid, err, want)
		}
	}
	for _, user := range []string{"", "1000", "agent:agent", "1000:", ":1000", "-1:0", "0:-1", "1000:1000:1"} {
		if _, _, err := numericUser(user); err == nil || !strings.Contains(err.Error(), "is not numeric uid:gid") {
			t.Errorf("numericUser(%q): %v; want it refused", user, err)
		}
	}
}

// TestMetaEntriesAreRootsAndReadOnlyWhereGitMadeThem: the seeded metadata
// is root's; a file git left writable by its owner stays writable by
// root alone (0644), one git made read-only (an object) stays read-only
// for all (0444), and directories are 0755. Reflogs and hooks are left
// out.
// Sweep mutant (seed 271828, not run in its sweep):
// dadapter/docker/storage_ops.go:metaEntries:negate:8c1e494c.
func TestMetaEntriesAreRootsAndReadOnlyWhereGitMadeThem(t *testing.T) {
	git := t.TempDir()
	for name, mode := range map[string]os.FileMode{"HEAD": 0o664, "objects/ab/cdef": 0o444, "logs/HEAD": 0o644, "hooks/pre-commit": 0o755} {
		p := filepath.Join(git, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := metaEntries(tw, git, ".git/"); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, h := range tarHeaders(t, buf.Bytes()) {
		got[h.Name] = fmt.Sprintf("%#o %d:%d", h.Mode, h.Uid, h.Gid)
	}
	want := map[string]string{".git/HEAD": "0644 0:0", ".git/objects/": "0755 0:0", ".git/objects/ab/": "0755 0:0", ".git/objects/ab/cdef": "0444 0:0"}
	if !maps.Equal(got, want) {
		t.Errorf("metaEntries wrote %v, want %v", got, want)
	}
}

// TestAllocationNeedsAnAbsoluteRepository: the source repository is named
// by an absolute path, the form the runner-owned repository is keyed by;
// a relative one (read against whatever directory the process is in) is
// refused, saying so, before anything is asked of the engine or made on
// disk.
// Sweep survivor (seed 271828): dadapter/docker/storage_ops.go:D.allocate:drop-guard:c73973f3.
func TestAllocationNeedsAnAbsoluteRepository(t *testing.T) {
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the engine was asked %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotImplemented)
		w.Write([]byte(`{"message":"not in this test"}`))
	})
	root := t.TempDir()
	d := adapterOn(t, cli, root)
	for _, repo := range []string{"repo", "./repo", "../repo", ""} {
		owner := newOwner(dtest.NewToken())
		_, err := d.allocate(context.Background(), owner, dadapter.Source{Repository: repo}, nil)
		if err == nil || !strings.Contains(err.Error(), "is not an absolute path") {
			t.Errorf("allocate from %q: %v; want it refused as not an absolute path", repo, err)
		}
		if left, _ := os.ReadDir(root); len(left) > 0 {
			t.Errorf("allocate from %q made %v under the runner root", repo, left)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.held) > 0 {
		t.Errorf("%d allocations held after the refusals", len(d.held))
	}
}

// TestAllocationStopsWhenItCannotLookForCarriers: before it makes
// anything, an allocation looks for objects already carrying its ID; when
// the engine cannot answer that look, the allocation fails with the
// look's error and creates nothing: no volume is asked for, and nothing
// is left held.
// Sweep survivor (seed 271828, not run in its sweep):
// dadapter/docker/storage_ops.go:allocation.run:ignore-error:e0794529.
func TestAllocationStopsWhenItCannotLookForCarriers(t *testing.T) {
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/containers/json") {
			t.Errorf("the engine was asked %s %s after the look failed", r.Method, r.URL.Path)
		}
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"message":"the engine's disk is full"}`))
	})
	d := adapterOn(t, cli, t.TempDir())
	repo, head := userRepo(t)
	_, err := d.allocate(context.Background(), newOwner(dtest.NewToken()), dadapter.Source{Repository: repo, Commit: head}, nil)
	if err == nil || !strings.Contains(err.Error(), "look for objects carrying the allocation ID") || !strings.Contains(err.Error(), "the engine's disk is full") {
		t.Fatalf("allocate when the look fails: %v; want the look's error", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.held) > 0 {
		t.Errorf("%d allocations held after the failure", len(d.held))
	}
}

// TestCleanupRetryStopsAtTheFirstSuccess: a cleanup call the engine failed
// is tried again every CleanupRetry within the window, and only until one
// succeeds: a removal that succeeded is not sent again for the rest of the
// window (which would hold the settlement back by the whole window).
// Sweep mutant (seed 271828, not run in its sweep):
// dadapter/docker/supervise.go:cleanup.retry:drop-guard:31c7ccb0.
func TestCleanupRetryStopsAtTheFirstSuccess(t *testing.T) {
	c := &cleanup{opt: Options{CallTimeout: time.Second, CleanupWindow: 2 * time.Second, CleanupRetry: time.Millisecond}}
	calls := 0
	err := c.retry(func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("the engine is busy")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("retry: %v after %d calls; want success at the third, and no call after it", err, calls)
	}
}

// TestGoneTakesOnlyNotFoundAsDone: cleanup treats "no such object" as
// done (what it wanted is true), and every other failure as a failure.
// Sweep mutants (seed 1618): dadapter/docker/supervise.go:gone:drop-guard:311b92e7
// and gone:negate:d6b898d7.
func TestGoneTakesOnlyNotFoundAsDone(t *testing.T) {
	if err := gone(fmt.Errorf("remove container: %w", cerrdefs.ErrNotFound)); err != nil {
		t.Errorf("gone of not found: %v, want done", err)
	}
	other := fmt.Errorf("remove container: %w", cerrdefs.ErrUnavailable)
	if err := gone(other); err != other {
		t.Errorf("gone of %v: %v, want the failure", other, err)
	}
	if err := gone(nil); err != nil {
		t.Errorf("gone of nil: %v", err)
	}
}

// TestStoppedPrefersTheContextsError: a call cut short by an abort failed
// because of the abort: its error says so first (errors.Is the context's
// error), keeping the call's own words; a call whose context is live keeps
// its error as it is.
// Sweep mutant (seed 1618): dadapter/docker/containers.go:stopped:ignore-error:92d7907f.
func TestStoppedPrefersTheContextsError(t *testing.T) {
	callErr := errors.New("read: connection reset")
	if err := stopped(cancelledContext(), callErr); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("stopped with an ended context: %v, want Canceled with the call's words", err)
	}
	if err := stopped(context.Background(), callErr); err != callErr {
		t.Errorf("stopped with a live context: %v, want the call's error", err)
	}
}

// cancelledContext is a context already cancelled.
func cancelledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestAgentProfileEnvironmentNamesVariables: the profile's environment
// lists names of the runner's variables to pass on; an empty name, or one
// with "=" or NUL in it, is no variable name and is refused, naming it.
// Sweep mutant (seed 1618): dadapter/docker/start.go:checkProfile:drop-guard:89ee1f83.
func TestAgentProfileEnvironmentNamesVariables(t *testing.T) {
	for _, name := range []string{"", "A=B", "A\x00B"} {
		err := checkProfile(dadapter.AgentProfile{Image: "agent:1", Env: []string{"HOME", name}})
		if err == nil || !strings.Contains(err.Error(), "which is not a variable name") {
			t.Errorf("checkProfile with env name %q: %v; want it refused", name, err)
		}
	}
	if err := checkProfile(dadapter.AgentProfile{Image: "agent:1", Env: []string{"HOME", "GOFLAGS"}}); err != nil {
		t.Errorf("checkProfile with variable names: %v", err)
	}
}

// TestWorkEntriesAreTheArchivesTree: the work tree's entries are the
// archive's files, directories and links by their paths, owned by the
// agent's user, with the modes the contract gives them (the archive's own
// modes and owner are not kept); the archive's pax comment (the commit ID)
// is not an entry.
func TestWorkEntriesAreTheArchivesTree(t *testing.T) {
	in := archiveOf(t, []*tar.Header{
		{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header", PAXRecords: map[string]string{"comment": strings.Repeat("a", 40)}},
		{Typeflag: tar.TypeReg, Name: "README.md", Mode: 0o664, Size: 3},
		{Typeflag: tar.TypeDir, Name: "src/", Mode: 0o775},
		{Typeflag: tar.TypeReg, Name: "src/main.go", Mode: 0o600, Size: 3},
		{Typeflag: tar.TypeReg, Name: "run.sh", Mode: 0o775, Size: 3},
		{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "README.md", Mode: 0o664},
		{Typeflag: tar.TypeDir, Name: "sub/", Mode: 0o775}, // a submodule, empty as a checkout leaves it
	})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := workEntries(tw, bytes.NewReader(in), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range tarHeaders(t, buf.Bytes()) {
		got = append(got, fmt.Sprintf("%s %c %#o %d:%d %s %d", h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Linkname, h.Size))
	}
	want := []string{
		"README.md 0 0644 1000:1000  3",
		"src/ 5 0755 1000:1000  0",
		"src/main.go 0 0644 1000:1000  3",
		"run.sh 0 0755 1000:1000  3",
		"link 2 0777 1000:1000 README.md 0",
		"sub/ 5 0755 1000:1000  0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("work entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestWorkEntriesRefuseWhatACheckoutWouldNot: the archive is git's, but
// the tree is the user's, and git archive writes what a checkout refuses:
// a name that would leave /task or land in the metadata, a name twice, a
// name below a link, an entry of another kind. Each fails the seed,
// naming the entry.
func TestWorkEntriesRefuseWhatACheckoutWouldNot(t *testing.T) {
	file := func(name string) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: 3}
	}
	for _, c := range []struct {
		entries []*tar.Header
		want    string
	}{
		{[]*tar.Header{file(".git/config")}, `".git/config" in the commit's archive has a part named .git`},
		{[]*tar.Header{file("a/.GiT/hooks/x")}, `"a/.GiT/hooks/x" in the commit's archive has a part named .git`},
		{[]*tar.Header{file("../x")}, `"../x" in the commit's archive is not a clean path below /task`},
		{[]*tar.Header{file("/etc/passwd")}, `"/etc/passwd" in the commit's archive is not a clean path below /task`},
		{[]*tar.Header{file("a/./b")}, `"a/./b" in the commit's archive is not a clean path below /task`},
		{[]*tar.Header{file("a"), file("a")}, `"a" is twice in the commit's archive`},
		{[]*tar.Header{{Typeflag: tar.TypeSymlink, Name: "d", Linkname: "/etc"}, file("d/passwd")}, `"d/passwd" in the commit's archive lies below the link "d"`},
		{[]*tar.Header{{Typeflag: tar.TypeLink, Name: "h", Linkname: "README.md"}}, `"h" in the commit's archive is not a file, directory or link`},
		{[]*tar.Header{{Typeflag: tar.TypeFifo, Name: "f"}}, `"f" in the commit's archive is not a file, directory or link`},
	} {
		err := workEntries(tar.NewWriter(io.Discard), bytes.NewReader(archiveOf(t, c.entries)), 1000, 1000)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.entries[len(c.entries)-1].Name, err, c.want)
		}
	}
	if err := workEntries(tar.NewWriter(io.Discard), strings.NewReader("not a tar, and not empty either: a corrupt archive"), 0, 0); err == nil {
		t.Error("a corrupt archive was taken")
	}
}

// TestWorkEntriesFailWithTheSeedsWriter: a seed whose copy into the
// keeper ends (the engine closed the stream) fails at the entry it was
// writing, header or content, never goes on as if the entry were written.
func TestWorkEntriesFailWithTheSeedsWriter(t *testing.T) {
	file := archiveOf(t, []*tar.Header{{Typeflag: tar.TypeReg, Name: "README.md", Mode: 0o644, Size: 3}})
	dir := archiveOf(t, []*tar.Header{{Typeflag: tar.TypeDir, Name: "src/", Mode: 0o755}})
	for _, c := range []struct {
		what  string
		in    []byte
		limit int
	}{{"a file's header", file, 0}, {"a file's content", file, 512}, {"a directory's header", dir, 0}} {
		w := &failingWriter{limit: c.limit}
		err := workEntries(tar.NewWriter(w), bytes.NewReader(c.in), 1000, 1000)
		if !errors.Is(err, errStreamClosed) {
			t.Errorf("writer failing at %s: %v; want its error", c.what, err)
		}
	}
}

var errStreamClosed = errors.New("the copy's stream is closed")

// failingWriter takes limit bytes, then fails.
type failingWriter struct{ limit, n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		return 0, errStreamClosed
	}
	w.n += len(p)
	return len(p), nil
}

// TestSeedTarFailsWithItsParts: the seed is the staged metadata and the
// staged tree; a part that cannot be read (metadata gone, archive gone,
// archive corrupt) fails the seed with that part's error, never seeds
// storage without it.
func TestSeedTarFailsWithItsParts(t *testing.T) {
	staged := func(t *testing.T) gitrepo.Staged {
		dir := t.TempDir()
		s := gitrepo.Staged{GitDir: filepath.Join(dir, "meta"), Archive: filepath.Join(dir, "work.tar")}
		if err := os.MkdirAll(filepath.Join(s.GitDir, "objects"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.GitDir, "HEAD"), []byte(strings.Repeat("a", 40)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.Archive, archiveOf(t, []*tar.Header{{Typeflag: tar.TypeReg, Name: "README.md", Mode: 0o644, Size: 3}}), 0o600); err != nil {
			t.Fatal(err)
		}
		return s
	}
	whole := staged(t)
	var buf bytes.Buffer
	if err := seedTar(&buf, whole, 1000, 1000); err != nil {
		t.Fatalf("seedTar of whole staged parts: %v", err)
	}
	var names []string
	for _, h := range tarHeaders(t, buf.Bytes()) {
		names = append(names, h.Name)
	}
	if want := []string{".git/", ".git/HEAD", ".git/objects/", "README.md"}; !slices.Equal(names, want) {
		t.Errorf("seed entries %q, want %q", names, want)
	}

	noMeta := staged(t)
	if err := os.RemoveAll(noMeta.GitDir); err != nil {
		t.Fatal(err)
	}
	if err := seedTar(io.Discard, noMeta, 1000, 1000); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("seedTar without the metadata: %v; want the walk's not-exist error", err)
	}
	noArchive := staged(t)
	if err := os.Remove(noArchive.Archive); err != nil {
		t.Fatal(err)
	}
	if err := seedTar(io.Discard, noArchive, 1000, 1000); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("seedTar without the archive: %v; want the open's not-exist error", err)
	}
	corrupt := staged(t)
	if err := os.WriteFile(corrupt.Archive, []byte(strings.Repeat("not a tar ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := seedTar(io.Discard, corrupt, 1000, 1000); err == nil || !strings.Contains(err.Error(), "the commit's archive") {
		t.Errorf("seedTar of a corrupt archive: %v; want the archive's error", err)
	}
}

// archiveOf writes headers as a tar, each regular file with "abc" as its
// content.
func archiveOf(t *testing.T, hs []*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte("abc")[:h.Size]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestStartInputNeedsAnOwnerTokenAndAnAttemptID: Start refuses, before it
// allocates anything, a runner owner that is not 32 lowercase hex (it
// becomes a label and a path) and an attempt ID that is not a UUID, each
// naming what is wrong; a well-formed input passes.
// Sweep mutant (seed 1618): dadapter/docker/start.go:checkInput:drop-guard:3ca5809b.
func TestStartInputNeedsAnOwnerTokenAndAnAttemptID(t *testing.T) {
	good := dadapter.InvocationInput{RunnerOwner: dtest.NewToken(), AttemptID: dtest.NewID(),
		Deadline: time.Now().Add(time.Hour), Profile: dadapter.AgentProfile{Image: "agent:1"}}
	if err := checkInput(good); err != nil {
		t.Fatalf("a well-formed input: %v", err)
	}
	for _, owner := range []string{"", "../etc", strings.Repeat("A", 32), strings.Repeat("a", 31)} {
		in := good
		in.RunnerOwner = owner
		if err := checkInput(in); err == nil || !strings.Contains(err.Error(), "is not 32 lowercase hex") {
			t.Errorf("runner owner %q: %v; want it refused", owner, err)
		}
	}
	in := good
	in.AttemptID = "attempt-1"
	if err := checkInput(in); err == nil || !strings.Contains(err.Error(), "attempt ID") {
		t.Errorf("attempt ID %q: %v; want it refused", in.AttemptID, err)
	}
}

// TestRunnerRepoNeedsTheSeedsRepository: the commits of task storage go
// into the runner-owned repository of the repository it was seeded from;
// storage that does not name it (recovered from labels that lost it) is
// refused, saying so, not opened as some other repository.
// Sweep mutant (seed 1618): dadapter/docker/commit.go:storage.runnerRepo:drop-guard:c1ddd2a5.
func TestRunnerRepoNeedsTheSeedsRepository(t *testing.T) {
	s := &storage{owner: newOwner(dtest.NewToken())}
	_, err := s.runnerRepo(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "does not name the repository it was seeded from") {
		t.Fatalf("runnerRepo of storage with no repository: %v; want it refused", err)
	}
}

// TestTarEntryOfAFileGoneSinceTheWalk: a file the walk listed but that is
// gone when it is opened fails the entry with the open's own error (the
// file does not exist), never with a later, unrelated one.
// Sweep mutant (seed 1618): dadapter/docker/storage_ops.go:tarEntry:ignore-error:31d5f59c~2.
func TestTarEntryOfAFileGoneSinceTheWalk(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "gone.txt")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(io.Discard)
	err = tarEntry(tw, root, "gone.txt", "gone.txt", fs.FileInfoToDirEntry(info), 0o644, 1000, 1000)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("tarEntry of a file gone since the walk: %v, want the open's not-exist", err)
	}
}

// TestWaitOutcomeReadsAnExitOrItsAbsence: the wait's answer is the exit
// status when it is one (0 to 255, 0 included), and otherwise the engine's
// word that its wait ended without an exit: no exit code (-1), with the
// engine's reason.
// Sweep mutant (seed 1618): dadapter/docker/start.go:waitOutcome:drop-guard:df33e952.
func TestWaitOutcomeReadsAnExitOrItsAbsence(t *testing.T) {
	for _, code := range []int64{0, 1, 137} {
		if got := waitOutcome(container.WaitResponse{StatusCode: code}); got.code != int(code) || got.err != nil {
			t.Errorf("a wait answered %d: %+v, want that exit", code, got)
		}
	}
	got := waitOutcome(container.WaitResponse{StatusCode: -1, Error: &container.WaitExitError{Message: "the request ended"}})
	if got.code != -1 || got.err == nil || got.err.Error() != "the engine's wait ended without an exit: the request ended" {
		t.Errorf("a wait that ended without an exit: %+v", got)
	}
}

// TestReadableNeedsABaseAndABaseline: a helper reads task storage only
// when the storage knows the commit it was seeded from and its metadata
// baseline (a recovery handle whose keeper was lost knows neither): it is
// refused, saying so, before the engine is asked anything.
// Sweep mutant (seed 1618): dadapter/docker/export.go:D.readable:drop-guard:5a3ad6ef.
func TestReadableNeedsABaseAndABaseline(t *testing.T) {
	_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the engine was asked %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotImplemented)
	})
	d := adapterOn(t, cli, t.TempDir())
	for _, s := range []*storage{
		{owner: newOwner(dtest.NewToken()), baseline: "sha256:ab"},
		{owner: newOwner(dtest.NewToken()), base: strings.Repeat("a", 40)},
	} {
		d.mu.Lock()
		d.held[s.owner.AllocationID] = s
		d.mu.Unlock()
		if _, err := d.readable(context.Background(), s); err == nil || !strings.Contains(err.Error(), "has no recorded base and baseline") {
			t.Errorf("readable with base %q and baseline %q: %v; want it refused", s.base, s.baseline, err)
		}
	}
}

// TestCloneSaysWhenTheCommitCannotBeMaterialized: a task clone of a commit
// the user's repository does not have fails at the materialization (the
// fetch of the commit into the runner-owned repository), with its error,
// and makes no clone.
// Sweep mutant (seed 1618): dadapter/docker/clone.go:D.clone:ignore-error:f414690e.
func TestCloneSaysWhenTheCommitCannotBeMaterialized(t *testing.T) {
	d, root := noEngineAdapter(t)
	repo, _ := userRepo(t)
	parent := filepath.Join(root, dtest.NewToken(), "attempts", dtest.NewID())
	if err := os.MkdirAll(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	missing := strings.Repeat("e", 40)
	c, err := clone(t, context.Background(), d, parent, dadapter.Source{Repository: repo, Commit: missing}, nil)
	if err == nil || !strings.Contains(err.Error(), "gitrepo: fetch "+missing) {
		t.Fatalf("a clone of a commit the repository lacks: %+v, %v; want the materialization's error", c, err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) > 0 {
		t.Errorf("the failed clone left %v", entries)
	}
}

// tarHeaders reads the headers of a whole tar.
func tarHeaders(t *testing.T, data []byte) []*tar.Header {
	t.Helper()
	var hs []*tar.Header
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hs
		}
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
}

// noEngineAdapter is an adapter whose engine does not exist, on a fresh
// runner root: for the steps that must fail, or succeed, before any
// engine call.
func noEngineAdapter(t *testing.T) (d *D, root string) {
	t.Helper()
	noEngine, err := client.New(client.WithHost("unix://" + filepath.Join(t.TempDir(), "no-engine.sock")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { noEngine.Close() })
	root = t.TempDir()
	return adapterOn(t, noEngine, root), root
}
