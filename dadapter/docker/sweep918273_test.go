package docker

import (
	"context"
	"encoding/binary"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter/dtest"
)

// TestCommitRefusesABundleOverItsBound: the commit container's standard
// output is the bundle F takes into the runner-owned repository, read up
// to one byte past its bound (bundleBytes of the commit limit). A bundle
// that reaches past the bound fails the commit, saying so, before any of
// it is parsed or fetched: a cut bundle is not the commit, and the script's
// own measure of the changes is not the only bound on what F reads. The
// fake engine's commit container writes one byte more than the bound and
// exits 0.
// Sweep survivor (seed 918273): dadapter/docker/commit.go:D.commit:drop-guard:1505c45e.
func TestCommitRefusesABundleOverItsBound(t *testing.T) {
	const limit = 1 << 10
	over := bundleBytes(limit) + 1
	d, s := helperWorld(t, Options{CommitLimit: limit}, make([]byte, over))
	_, err := d.commit(context.Background(), s, time.Unix(1, 0))
	if err == nil || !strings.Contains(err.Error(), "the commit's bundle is over") {
		t.Fatalf("a commit whose bundle is %d bytes, over its bound: %v; want it refused as over the bound", over, err)
	}
}

// TestInspectTakesAManifestOfExactlyItsBound: the inspect container's
// change manifest is read up to one byte past its bound; a manifest of
// exactly the bound is whole and parsed, one byte more is refused as over
// it, before it is parsed.
// Sweep survivor (seed 918273): dadapter/docker/inspect.go:D.inspect:boundary:d2fd157a.
func TestInspectTakesAManifestOfExactlyItsBound(t *testing.T) {
	manifest := []byte("A\x00src/new.go\x00")
	limit := len(manifest)
	d, s := helperWorld(t, Options{}, manifest)
	m, err := d.inspect(context.Background(), s, limit)
	if err != nil || len(m.Changes) != 1 || m.Changes[0].Path != "src/new.go" {
		t.Fatalf("a manifest of exactly its bound (%d bytes): %+v, %v; want its one change", limit, m, err)
	}
	d, s = helperWorld(t, Options{}, manifest)
	if _, err := d.inspect(context.Background(), s, limit-1); err == nil || !strings.Contains(err.Error(), "the change manifest is over") {
		t.Fatalf("a manifest one byte over its bound: %v; want it refused as over the bound", err)
	}
}

// TestParseManifestRefusesACutLastRecord: every field of the inspect
// script's manifest ends with a NUL; a manifest whose last byte is not one
// was cut inside its last record, and is refused, never read as a shorter
// path.
// Sweep survivor (seed 918273): dadapter/docker/inspect.go:parseManifest:drop-guard:327d953f.
func TestParseManifestRefusesACutLastRecord(t *testing.T) {
	m, err := parseManifest([]byte("A\x00src/new.go"))
	if err == nil || !strings.Contains(err.Error(), "last record is cut") {
		t.Fatalf("a manifest cut inside its last path: %+v, %v; want it refused as cut", m, err)
	}
}

// helperWorld is an adapter on a fake engine with one held task storage:
// a storageEngine holding the storage's own two volumes, whose every
// helper container writes stdout to its standard output and exits 0.
func helperWorld(t *testing.T, opt Options, stdout []byte) (*D, *storage) {
	started := make(chan struct{})
	owner := newOwner(dtest.NewToken())
	e, cli := newStorageEngine(t)
	for _, k := range []Kind{KindWork, KindMeta} {
		e.volumes[objectName(k, owner.AllocationID)] = ownerLabels(owner, k)
	}
	e.before = func(w http.ResponseWriter, r *http.Request, path string) bool {
		switch {
		case !strings.HasPrefix(path, "/containers/"):
			return false // the volumes are the storage engine's
		case strings.HasSuffix(path, "/containers/c1/attach"):
			attached(t, w, func(conn net.Conn) {
				<-started
				for sent := 0; sent < len(stdout); {
					n := min(1<<20, len(stdout)-sent)
					header := []byte{1, 0, 0, 0, 0, 0, 0, 0}
					binary.BigEndian.PutUint32(header[4:], uint32(n))
					if _, err := conn.Write(append(header, stdout[sent:sent+n]...)); err != nil {
						return
					}
					sent += n
				}
			})
		case strings.HasSuffix(path, "/containers/c1/wait"):
			w.Write([]byte(`{"StatusCode":0}`))
		default:
			helperEngine(w, r, started)
		}
		return true
	}
	opt.Client, opt.RunnerRoot, opt.HelperImage = cli, t.TempDir(), "codeboost-helper:none"
	d, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	s := &storage{owner: owner, work: objectName(KindWork, owner.AllocationID), meta: objectName(KindMeta, owner.AllocationID),
		base: strings.Repeat("b", 40), baseline: "sha256:x", repository: t.TempDir()}
	d.held[owner.AllocationID] = s
	return d, s
}

// TestCappedKeepsAnOutputOfExactlyItsLimit: a helper's standard output is
// kept up to its limit and marked as overflowing only past it: an output
// of exactly the limit, in one write or in two, is whole and not marked
// (a diff or a bundle of exactly the bound would otherwise be refused as
// over it); one byte more is marked and cut at the limit.
// Sweep survivor (seed 918273): dadapter/docker/containers.go:capped.Write:boundary:01619efb.
func TestCappedKeepsAnOutputOfExactlyItsLimit(t *testing.T) {
	for _, writes := range [][]string{{"abcd"}, {"ab", "cd"}} {
		c := &capped{limit: 4}
		for _, w := range writes {
			if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if c.overflow || string(c.buf) != "abcd" {
			t.Errorf("writes %q into a limit of 4: kept %q, overflow %v; want all of it, not marked", writes, c.buf, c.overflow)
		}
	}
	c := &capped{limit: 4}
	c.Write([]byte("abcde"))
	if !c.overflow || string(c.buf) != "abcd" {
		t.Errorf("5 bytes into a limit of 4: kept %q, overflow %v; want the first 4, marked", c.buf, c.overflow)
	}
}
