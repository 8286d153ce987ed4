package docker

// The tests of this file kill the Docker adapter's survivors of the
// seed-60221 sweep. None needs an engine: each gives the adapter a fake
// one (fakeEngine), whose answers put the adapter where a real engine
// rarely would (a volume replaced by a stranger's, a cancel that lands
// between two creates, a staging directory that cannot be removed, a
// create whose answer never came).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/dtest"
)

// storageEngine is a fake engine that keeps volumes and containers by
// name, enough for a whole allocation and its back-out: the creates
// answer with the labels they were given, the lists find nothing that
// carries an allocation ID (no stranger holds it), the removes remove.
// before, when set, sees every request first and may end it.
type storageEngine struct {
	t       *testing.T
	mu      sync.Mutex
	volumes map[string]map[string]string // name → labels
	before  func(w http.ResponseWriter, r *http.Request, path string) bool
}

// left is the volumes the engine still has.
func (e *storageEngine) left() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.volumes))
}

var apiPrefix = regexp.MustCompile(`^/v[0-9.]+`)

func newStorageEngine(t *testing.T) (*storageEngine, *client.Client) {
	e := &storageEngine{t: t, volumes: map[string]map[string]string{}}
	_, cli := fakeEngine(t, e.serve)
	return e, cli
}

func (e *storageEngine) serve(w http.ResponseWriter, r *http.Request) {
	path := apiPrefix.ReplaceAllString(r.URL.Path, "")
	e.mu.Lock()
	before := e.before
	e.mu.Unlock()
	if before != nil && before(w, r, path) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && (path == "/containers/json" || path == "/networks"):
		w.Write([]byte(`[]`))
	case r.Method == http.MethodGet && path == "/volumes":
		w.Write([]byte(`{"Volumes":[]}`))
	case r.Method == http.MethodPost && path == "/volumes/create":
		var v struct {
			Name   string
			Labels map[string]string
		}
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			e.t.Errorf("volume create: %v", err)
		}
		e.volumes[v.Name] = v.Labels
		json.NewEncoder(w).Encode(map[string]any{"Name": v.Name, "Labels": v.Labels, "Driver": "local", "Mountpoint": "/v/" + v.Name})
	case strings.HasPrefix(path, "/volumes/"):
		name := strings.TrimPrefix(path, "/volumes/")
		labels, ok := e.volumes[name]
		switch {
		case !ok:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"message":"get %s: no such volume"}`, name)
		case r.Method == http.MethodDelete:
			delete(e.volumes, name)
			w.WriteHeader(http.StatusNoContent)
		default:
			json.NewEncoder(w).Encode(map[string]any{"Name": name, "Labels": labels, "Driver": "local", "Mountpoint": "/v/" + name})
		}
	case r.Method == http.MethodPost && path == "/containers/create":
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"Id":"` + strings.Repeat("ab", 32) + `","Warnings":[]}`))
	case r.Method == http.MethodPut && strings.HasSuffix(path, "/archive"):
		io.Copy(io.Discard, r.Body)
	case r.Method == http.MethodDelete && strings.HasPrefix(path, "/containers/"):
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/containers/") && strings.HasSuffix(path, "/json"):
		w.WriteHeader(http.StatusNotFound) // no container by that name: the keeper's create never went out
		w.Write([]byte(`{"message":"no such container"}`))
	default:
		e.t.Errorf("the fake engine was asked %s %s", r.Method, path)
		w.WriteHeader(http.StatusNotImplemented)
		w.Write([]byte(`{"message":"not in this test"}`))
	}
}

// TestCheckVolumesRefusesAStrangersVolume: a volume removed by hand and
// made again under the storage's name by someone else answers its inspect
// like the storage's own; only its labels tell them apart. The check
// refuses it, naming it, so that no export or commit container mounts a
// stranger's volume as the agent's work. Each of the two volumes is
// checked: a stranger's work volume, and a stranger's meta volume beside
// the storage's own work volume.
// Sweep survivor (seed 60221): dadapter/docker/storage.go:D.checkVolumes:drop-guard:56bce32b.
func TestCheckVolumesRefusesAStrangersVolume(t *testing.T) {
	for _, replaced := range []Kind{KindWork, KindMeta} {
		t.Run(string(replaced), func(t *testing.T) {
			e, cli := newStorageEngine(t)
			d := adapterOn(t, cli, t.TempDir())
			owner := newOwner(dtest.NewToken())
			s := &storage{owner: owner, work: objectName(KindWork, owner.AllocationID), meta: objectName(KindMeta, owner.AllocationID)}
			stranger := newOwner(dtest.NewToken())
			for _, k := range []Kind{KindWork, KindMeta} {
				e.volumes[objectName(k, owner.AllocationID)] = ownerLabels(owner, k)
			}
			e.volumes[objectName(replaced, owner.AllocationID)] = ownerLabels(stranger, replaced)
			err := d.checkVolumes(context.Background(), s)
			name := objectName(replaced, owner.AllocationID)
			if err == nil || err.Error() != "volume "+name+" does not carry the labels of task storage "+owner.AllocationID {
				t.Fatalf("checkVolumes with a stranger's %s volume: %v; want it refused, naming it", replaced, err)
			}
		})
	}
	t.Run("both the storage's own", func(t *testing.T) {
		e, cli := newStorageEngine(t)
		d := adapterOn(t, cli, t.TempDir())
		owner := newOwner(dtest.NewToken())
		for _, k := range []Kind{KindWork, KindMeta} {
			e.volumes[objectName(k, owner.AllocationID)] = ownerLabels(owner, k)
		}
		s := &storage{owner: owner, work: objectName(KindWork, owner.AllocationID), meta: objectName(KindMeta, owner.AllocationID)}
		if err := d.checkVolumes(context.Background(), s); err != nil {
			t.Fatalf("checkVolumes of the storage's own volumes: %v", err)
		}
	})
}

// TestAllocationCancelledBetweenItsVolumesStagesNothing: an allocation
// checks its context between steps. A cancel that lands while the meta
// volume is being created (a create the context does not cut short, so
// that the volume is known) stops the allocation there: it fails with the
// cancel, removes both volumes it made, and never reaches the stage, which
// would make the runner-owned repository and a staging directory (and run
// git) for an allocation nobody wants any more.
// Sweep survivor (seed 60221): dadapter/docker/storage_ops.go:allocation.run:ignore-error:29bffa83.
func TestAllocationCancelledBetweenItsVolumesStagesNothing(t *testing.T) {
	e, cli := newStorageEngine(t)
	root := t.TempDir()
	d := adapterOn(t, cli, root)
	owner := newOwner(dtest.NewToken())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	meta := objectName(KindMeta, owner.AllocationID)
	e.before = func(w http.ResponseWriter, r *http.Request, path string) bool {
		if path == "/volumes/create" && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			if strings.Contains(string(body), meta) {
				cancel()
			}
		}
		return false
	}
	repo, head := userRepo(t)
	groups := 0
	_, err := d.allocate(ctx, owner, dadapter.Source{Repository: repo, Commit: head}, func(dadapter.ProcessGroup) { groups++ })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("allocate cancelled during the meta volume's create: %v; want the cancel", err)
	}
	if left, _ := os.ReadDir(root); len(left) > 0 {
		t.Errorf("the cancelled allocation made %v under the runner root", left)
	}
	if groups > 0 {
		t.Errorf("the cancelled allocation started %d git process groups", groups)
	}
	if left := e.left(); len(left) > 0 {
		t.Errorf("volumes left after the back-out: %v", left)
	}
}

// TestAllocationFailsWhenItsStagingCannotBeRemoved: the staging directory
// holds a copy of the user's commit on the host; once the seed is in the
// volumes it goes. When it cannot be removed, the allocation fails,
// naming the directory it left (a host path with no labels, which only
// recovery's sweep of the staging directory finds), and backs out; it
// does not hand out storage while a copy of the repository lies unowned
// on the host. The fake engine makes the directory unremovable while the
// seed is copied: it turns the staging directory's parent into a file,
// so that removing the directory fails with "not a directory".
// Sweep survivor (seed 60221): dadapter/docker/storage_ops.go:allocation.run:ignore-error:daa1b4d7.
func TestAllocationFailsWhenItsStagingCannotBeRemoved(t *testing.T) {
	e, cli := newStorageEngine(t)
	root := t.TempDir()
	d := adapterOn(t, cli, root)
	owner := newOwner(dtest.NewToken())
	parent := filepath.Join(root, owner.RunnerOwner, "staging")
	e.before = func(w http.ResponseWriter, r *http.Request, path string) bool {
		if r.Method != http.MethodPut || !strings.HasSuffix(path, "/archive") {
			return false
		}
		io.Copy(io.Discard, r.Body)
		if err := os.RemoveAll(parent); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(parent, []byte("not a directory\n"), 0o600); err != nil {
			t.Error(err)
		}
		return true
	}
	repo, head := userRepo(t)
	s, err := d.allocate(context.Background(), owner, dadapter.Source{Repository: repo, Commit: head}, nil)
	want := "staging directory " + filepath.Join(parent, owner.AllocationID) + " left behind: "
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("allocate whose staging cannot be removed: %+v, %v; want the error %q", s, err, want)
	}
	if left := e.left(); len(left) > 0 {
		t.Errorf("volumes left after the back-out: %v", left)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.held) > 0 {
		t.Errorf("%d allocations held after the failure", len(d.held))
	}
}

// lostCreate is a handle whose agent container's create went out and got
// no answer: the container is known only by its name and its labels.
func lostCreate(d *D) (*handle, dadapter.StorageOwner) {
	owner := newOwner(dtest.NewToken())
	in := dadapter.InvocationInput{RunnerOwner: owner.RunnerOwner, AttemptID: owner.AttemptID}
	spec := client.ContainerCreateOptions{Name: objectName(KindAgent, owner.AllocationID) + "-" + nonce(),
		Config: &container.Config{Labels: ownerLabels(owner, KindAgent)}}
	return &handle{d: d, in: in, spec: spec}, owner
}

// TestRemoveOfALostCreateTakesOnlyItsOwnContainer: when the agent's create
// never answered, the container may exist or not; remove looks for it by
// its name and takes it only when its three owner labels are the
// attempt's. A container of that name with another allocation's label is
// a stranger's and stays; when no container is the attempt's, nothing is
// removed and the remove succeeds (there is nothing to release); when the
// look itself fails, the agent stays unknown, so that the settlement
// names it as possibly left behind.
// Sweep survivors (seed 60221): dadapter/docker/supervise.go:handle.lookup:negate:7af9c64c,
// dadapter/docker/supervise.go:handle.remove:drop-guard:7ad07419.
func TestRemoveOfALostCreateTakesOnlyItsOwnContainer(t *testing.T) {
	type listed struct {
		Id     string
		Names  []string
		Labels map[string]string
	}
	for _, tc := range []struct {
		name    string
		list    func(h *handle, owner dadapter.StorageOwner) []listed // nil: the list fails
		removed string                                                // the container removed, "" for none
		unknown bool
	}{
		{name: "the attempt's own, after a stranger's", removed: "c0ffee02",
			list: func(h *handle, owner dadapter.StorageOwner) []listed {
				stranger := owner
				stranger.AllocationID = dtest.NewID()
				return []listed{
					{Id: "c0ffee01", Names: []string{"/" + h.spec.Name}, Labels: ownerLabels(stranger, KindAgent)},
					{Id: "c0ffee02", Names: []string{"/" + h.spec.Name}, Labels: ownerLabels(owner, KindAgent)},
				}
			}},
		{name: "only a stranger's",
			list: func(h *handle, owner dadapter.StorageOwner) []listed {
				stranger := owner
				stranger.RunnerOwner = dtest.NewToken()
				return []listed{{Id: "c0ffee01", Names: []string{"/" + h.spec.Name}, Labels: ownerLabels(stranger, KindAgent)}}
			}},
		{name: "none",
			list: func(*handle, dadapter.StorageOwner) []listed { return []listed{} }},
		{name: "the look fails", unknown: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h *handle
			var owner dadapter.StorageOwner
			var mu sync.Mutex
			var removed []string
			_, cli := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
				path := apiPrefix.ReplaceAllString(r.URL.Path, "")
				switch {
				case r.Method == http.MethodGet && path == "/containers/json" && tc.list != nil:
					json.NewEncoder(w).Encode(tc.list(h, owner))
				case r.Method == http.MethodGet && path == "/containers/json":
					w.WriteHeader(http.StatusInternalServerError)
					w.Write([]byte(`{"message":"the engine is restarting"}`))
				case r.Method == http.MethodDelete && strings.HasPrefix(path, "/containers/"):
					mu.Lock()
					removed = append(removed, strings.TrimPrefix(path, "/containers/"))
					mu.Unlock()
					w.WriteHeader(http.StatusNoContent)
				default:
					t.Errorf("the engine was asked %s %s", r.Method, path)
					w.WriteHeader(http.StatusNotImplemented)
				}
			})
			h, owner = lostCreate(adapterOn(t, cli, t.TempDir()))
			a := &agent{unknown: true}
			err := h.remove(context.Background(), a)
			if (err != nil) != tc.unknown {
				t.Errorf("remove: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string(nil)
			if tc.removed != "" {
				want = []string{tc.removed}
			}
			if fmt.Sprint(removed) != fmt.Sprint(want) {
				t.Errorf("removed %v, want %v", removed, want)
			}
			if tc.removed != "" && a.id != tc.removed {
				t.Errorf("the agent's ID is %q after the look, want %q", a.id, tc.removed)
			}
			if tc.removed == "" && a.unknown != tc.unknown {
				t.Errorf("the agent is unknown: %v, want %v", a.unknown, tc.unknown)
			}
		})
	}
}

// TestUncleanNamesPathsOfAManifestOfExactlyTheLimit: a manifest of exactly
// the bound fits (the capture keeps up to the bound and marks what passes
// it as overflow), so its paths are named; one byte more is over it.
// Sweep survivor (seed 60221): dadapter/docker/tree.go:unclean:boundary:d2fd157a.
func TestUncleanNamesPathsOfAManifestOfExactlyTheLimit(t *testing.T) {
	out := helperOutput{stdout: []byte("ignored\x00src/extra.go\x00")}
	limit := len(out.stdout)
	if got := unclean(out, limit); !strings.Contains(got, `"src/extra.go"`) {
		t.Errorf("unclean of a manifest of exactly %d bytes says %q; want its path named", limit, got)
	}
	if got, want := unclean(out, limit-1), fmt.Sprintf("its change manifest is over %d bytes", limit-1); got != want {
		t.Errorf("unclean of a manifest one byte over says %q; want %q", got, want)
	}
}
