package docker

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/gitrepo"
)

// PrepareTaskFilesystems allocates task storage for owner and seeds it with
// src's commit (src.Repository's HEAD, resolved once, when src names none):
// the work tree, owned by the agent's user, in the work volume, and the git
// metadata, owned by root, in the meta volume. The commit comes from the
// runner-owned repository (the user's repository is only read, by a fetch),
// staged on the host (gitrepo.Stage: its metadata, and its tree as a tar
// that is never written out) in a directory removed before done; every
// git call's process group is reported through onGroup.
//
// The allocation ID is the caller's ("Token in every request"): it is
// refused while this process holds it (an allocation in flight included)
// or while any Docker object carries it, and checked again right after the
// first create. An aborted or failed allocation removes what it made, with
// calls that ctx does not cut short, before done; whatever it could not
// remove, a staging directory included, is named in the error.
func (d *D) PrepareTaskFilesystems(ctx context.Context, owner dadapter.StorageOwner, src dadapter.Source, onGroup func(dadapter.ProcessGroup), done func(dadapter.TaskFilesystems, error)) {
	go func() {
		s, err := d.allocate(ctx, owner, src, onGroup)
		if err != nil {
			done(nil, fmt.Errorf("docker: allocate task storage %s: %w", owner.AllocationID, err))
			return
		}
		done(s, nil)
	}()
}

// ErrAllocationInUse refuses an allocation ID that names another
// allocation: held by this process, or carried by a Docker object.
var ErrAllocationInUse = errors.New("allocation ID already in use")

// allocation is what one allocation has made so far: its back-out removes
// exactly that.
type allocation struct {
	d       *D
	owner   dadapter.StorageOwner
	volumes bool   // a volume create went out: both are looked up by name, labels proving them ours
	keeper  string // the keeper's ID, once its create answered
	unknown bool   // a keeper create went out without an answer: look it up by name
	staging string // the staging directory, once made
}

func (d *D) allocate(ctx context.Context, owner dadapter.StorageOwner, src dadapter.Source, onGroup func(dadapter.ProcessGroup)) (*storage, error) {
	if err := checkOwner(owner); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(src.Repository) {
		return nil, fmt.Errorf("the source repository %.80q is not an absolute path", src.Repository)
	}
	if src.Commit != "" && !isCommitID(src.Commit) {
		return nil, fmt.Errorf("the source commit %.80q is not 40 lowercase hex digits", src.Commit)
	}
	if err := d.reserve(owner); err != nil {
		return nil, err
	}
	a := &allocation{d: d, owner: owner}
	s, err := a.run(ctx, src, onGroup)
	if err != nil {
		// Under the reservation still: nothing else takes the ID while
		// what this allocation made is removed.
		err = errors.Join(err, a.backOut())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		delete(d.held, owner.AllocationID)
		return nil, err
	}
	d.held[owner.AllocationID] = s
	return s, nil
}

// reserve holds the allocation ID for the allocation in flight, so that a
// second allocation under it in this process is refused before it creates
// anything: a volume create with a taken name answers with the existing
// volume, so two allocations in one process could not tell each other
// apart afterwards. Recovery sees the reservation as held storage.
func (d *D) reserve(owner dadapter.StorageOwner) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held[owner.AllocationID] != nil {
		return fmt.Errorf("%w: %s is held by this process", ErrAllocationInUse, owner.AllocationID)
	}
	d.held[owner.AllocationID] = &storage{owner: owner}
	return nil
}

// run makes the storage step by step, checking ctx between steps: the
// calls that create Docker objects are not cut short by it, so that every
// object made is known by its ID or its labelled name.
func (a *allocation) run(ctx context.Context, src dadapter.Source, onGroup func(dadapter.ProcessGroup)) (*storage, error) {
	d, id := a.d, a.owner.AllocationID
	if err := a.refuseCarried(ctx, nil); err != nil {
		return nil, err
	}
	a.volumes = true
	work, err := a.createVolume(KindWork)
	if err != nil {
		return nil, err
	}
	// The check and the create are not atomic across processes: now that
	// this allocation's first object exists, nothing else may carry the ID.
	if err := a.refuseCarried(ctx, []string{work}); err != nil {
		return nil, err
	}
	meta, err := a.createVolume(KindMeta)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	base, staged, err := a.stage(ctx, src, onGroup)
	if err != nil {
		return nil, err
	}
	baseline, err := metadataBaseline(staged.GitDir)
	if err != nil {
		return nil, err
	}
	s := &storage{owner: a.owner, base: base, baseline: baseline, work: work, meta: meta, repository: filepath.Clean(src.Repository)}
	if err := a.createKeeper(ctx, s); err != nil {
		return nil, err
	}
	s.keeper = a.keeper
	if err := a.seed(ctx, staged); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(a.staging); err != nil {
		return nil, stagingLeft(a.staging, err)
	}
	a.staging = ""
	if err := ctx.Err(); err != nil {
		return nil, err // an abort that came too late to stop anything still backs out
	}
	d.opt.Log.Debug("task storage allocated", "allocation", id, "base", base)
	return s, nil
}

// refuseCarried refuses the allocation ID when a Docker object carries it,
// other than the volumes named in ours.
func (a *allocation) refuseCarried(ctx context.Context, ours []string) error {
	d := a.d
	f := make(client.Filters).Add("label", LabelAllocation+"="+a.owner.AllocationID)
	var found []string
	err := d.call(ctx, func(ctx context.Context) error {
		cs, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			return err
		}
		for _, c := range cs.Items {
			found = append(found, "container "+strings.Join(c.Names, ","))
		}
		vs, err := d.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
		if err != nil {
			return err
		}
		for _, v := range vs.Items {
			if !slices.Contains(ours, v.Name) || !ownedPart(v.Labels, a.owner, Kind(v.Labels[LabelKind])) {
				found = append(found, "volume "+v.Name)
			}
		}
		ns, err := d.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
		if err != nil {
			return err
		}
		for _, n := range ns.Items {
			found = append(found, "network "+n.Name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("look for objects carrying the allocation ID: %w", err)
	}
	if len(found) > 0 {
		return fmt.Errorf("%w: %s is carried by %s", ErrAllocationInUse, a.owner.AllocationID, strings.Join(found, "; "))
	}
	return nil
}

// createVolume creates the allocation's volume of kind k. A volume create
// with a name already taken answers with the existing volume, so the
// answer's labels are what proves the volume this allocation's.
func (a *allocation) createVolume(k Kind) (string, error) {
	name := objectName(k, a.owner.AllocationID)
	var res client.VolumeCreateResult
	err := a.d.call(context.Background(), func(ctx context.Context) (err error) {
		res, err = a.d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: ownerLabels(a.owner, k)})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("create volume %s: %w", name, err)
	}
	if !ownedPart(res.Volume.Labels, a.owner, k) {
		return "", fmt.Errorf("%w: volume %s exists and is not this allocation's", ErrAllocationInUse, name)
	}
	return name, nil
}

// stage stages the commit: resolved (the user's HEAD when src names
// none), materialized in the runner-owned repository and staged from there
// (gitrepo.Stage: its metadata and its tree as a tar) into
// <RunnerRoot>/<runner>/staging/<allocation>. A staging directory that
// exists already is refused: it is another allocation's under the same ID,
// or a crash's, and not this one's to take.
func (a *allocation) stage(ctx context.Context, src dadapter.Source, onGroup func(dadapter.ProcessGroup)) (base string, staged gitrepo.Staged, err error) {
	repo, err := gitrepo.Open(ctx, a.d.opt.RunnerRoot, a.owner.RunnerOwner, src.Repository)
	if err != nil {
		return "", staged, err
	}
	base = src.Commit
	if base == "" {
		if base, err = repo.ResolveHead(ctx); err != nil {
			return "", staged, err
		}
	}
	if err := repo.Materialize(ctx, base, onGroup); err != nil {
		return "", staged, err
	}
	parent := filepath.Join(a.d.opt.RunnerRoot, a.owner.RunnerOwner, "staging")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", staged, fmt.Errorf("staging directory: %w", err)
	}
	dir := filepath.Join(parent, a.owner.AllocationID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", staged, fmt.Errorf("staging directory: %w", err)
	}
	a.staging = dir
	staged, err = repo.Stage(ctx, dir, base, onGroup)
	if err != nil {
		return "", staged, err
	}
	return base, staged, nil
}

// createKeeper creates the keeper: a container that is never started and
// exists to hold the volumes and to take the seed through the archive API.
// Its labels carry the base, the baseline and the repository, so that
// recovery can rebuild a handle that export, commit and release accept. The work volume takes the helper image's /task
// (its owner, the agent's user) when the keeper is created; the meta volume
// takes nothing (NoCopy), so its root stays root's.
func (a *allocation) createKeeper(ctx context.Context, s *storage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	labels := ownerLabels(a.owner, KindKeeper)
	labels[labelKeeperBase] = s.base
	labels[labelKeeperBaseline] = s.baseline
	labels[labelKeeperRepository] = s.repository
	host := lockedDown(0,
		mount.Mount{Type: mount.TypeVolume, Source: s.work, Target: taskDir},
		mount.Mount{Type: mount.TypeVolume, Source: s.meta, Target: metaDir, VolumeOptions: &mount.VolumeOptions{NoCopy: true}},
	)
	name := objectName(KindKeeper, a.owner.AllocationID)
	err := a.d.call(context.Background(), func(ctx context.Context) error {
		res, err := a.d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name: name,
			Config: &container.Config{
				Image: a.d.opt.HelperImage, Cmd: []string{"true"}, User: a.d.opt.AgentUser,
				Labels: labels, NetworkDisabled: true,
			},
			HostConfig: host,
		})
		if err != nil {
			a.unknown = !refused(err)
			return err
		}
		a.keeper = res.ID
		return nil
	})
	if err != nil {
		return fmt.Errorf("create the keeper %s: %w", name, err)
	}
	return nil
}

// seed copies the staged commit into the volumes through the keeper: the
// work tree, owned by the agent's user, into /task, and the metadata, owned
// by root, into the meta volume, which the keeper mounts where the agent
// does (/task/.git). It is one copy through the archive API: each copy
// into a stopped container mounts its root and volumes afresh, and a
// second copy cost about a tenth of an attempt (BenchmarkAttempt).
func (a *allocation) seed(ctx context.Context, staged gitrepo.Staged) error {
	uid, gid, _ := numericUser(a.d.opt.AgentUser) // New refused any other
	if err := a.d.copyTo(ctx, a.keeper, taskDir, func(w io.Writer) error { return seedTar(w, staged, uid, gid) }); err != nil {
		return fmt.Errorf("seed %s: %w", taskDir, err)
	}
	return nil
}

// seedTar writes the seed as one tar rooted at /task: the root-owned .git
// (the meta volume's root) and the metadata under it (metaEntries), then
// the work tree (workEntries).
func seedTar(w io.Writer, staged gitrepo.Staged, uid, gid int) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: ".git/", Mode: 0o755}); err != nil {
		return err
	}
	if err := metaEntries(tw, staged.GitDir, ".git/"); err != nil {
		return err
	}
	f, err := os.Open(staged.Archive)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := workEntries(tw, f, uid, gid); err != nil {
		return err
	}
	return tw.Close()
}

// copyTo streams the tar that write produces into the container's dest.
func (d *D) copyTo(ctx context.Context, id, dest string, write func(io.Writer) error) error {
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		err := write(pw)
		pw.CloseWithError(err)
		wrote <- err
	}()
	_, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: dest, Content: pr})
	pr.CloseWithError(errors.New("the copy ended")) // a writer still writing stops
	werr := <-wrote
	if err != nil {
		return stopped(ctx, err)
	}
	return werr
}

// backOut removes what the allocation made, with calls ctx does not cut
// short, and names what it could not remove.
func (a *allocation) backOut() error {
	var errs []error
	if a.volumes || a.keeper != "" || a.unknown {
		errs = append(errs, a.d.removeParts(a.owner, a.keeper))
	}
	if a.staging != "" {
		if err := os.RemoveAll(a.staging); err != nil {
			errs = append(errs, stagingLeft(a.staging, err))
		}
	}
	return errors.Join(errs...)
}

// stagingLeft names a staging directory left behind: a host path with no
// labels, which F's recovery removes by its path.
func stagingLeft(dir string, err error) error {
	return fmt.Errorf("staging directory %s left behind: %w", dir, err)
}

// metadataBaseline is the digest the export checks the meta volume
// against before git reads it, because the metadata decides what git runs
// and reads. It covers every regular file of the metadata as seeded: HEAD,
// index, config, refs and packed-refs, objects (loose and packed), info;
// and the export refuses metadata that holds anything but regular files and
// directories. It is "sha256:" and the SHA-256, in hex, of the lines
// "<sha256 of the file>  ./<path>", sorted bytewise and joined with
// newlines plus a final one: what `find . -type f -exec sha256sum {} + |
// sort | sha256sum` prints in the metadata directory, so that the export
// container recomputes it with busybox alone. It does not cover directories
// (an empty one changes nothing git does) or modes.
func metadataBaseline(gitDir string) (string, error) {
	var lines []string
	err := walkMeta(gitDir, func(rel string, d fs.DirEntry) error {
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(filepath.Join(gitDir, rel))
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		lines = append(lines, hex.EncodeToString(h.Sum(nil))+"  ./"+rel)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("metadata baseline: %w", err)
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n") + "\n"))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// walkMeta walks what of a git directory is seeded, in lexical order,
// calling fn with each entry's slash-separated path. Reflogs (logs/) and
// hooks are left out: the agent's git needs neither, a reflog names the
// host's user, and hooks never run (gitrepo.Stage writes neither; the
// rule stays for any git directory). Anything but a regular file or a
// directory is refused: staged metadata has none.
func walkMeta(gitDir string, fn func(rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(gitDir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (rel == "logs" || rel == "hooks") {
			return fs.SkipDir
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("%s in the clone's metadata is not a regular file", rel)
		}
		return fn(rel, d)
	})
}

// metaEntries writes the seeded metadata under prefix: root's, readable by
// all, writable by none but root (objects, which git makes read-only, stay
// so).
func metaEntries(tw *tar.Writer, gitDir, prefix string) error {
	return walkMeta(gitDir, func(rel string, d fs.DirEntry) error {
		mode := int64(0o755)
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			mode = 0o444
			if info.Mode().Perm()&0o200 != 0 {
				mode = 0o644
			}
		}
		return tarEntry(tw, gitDir, rel, prefix+rel, d, mode, 0, 0)
	})
}

// workEntries writes the work tree from the commit's archive (what git
// archive wrote), owned by uid:gid: files 0644 (0755 when executable),
// directories 0755 (a submodule's empty one too, as a checkout makes it),
// links as they are. The archive is git's, but the tree is the user's: a
// name that would leave /task or land in the metadata (a part named .git
// in any case), a name given twice or one below a link (which only a
// malformed tree has, and a checkout refuses too) fails the seed, and so
// does any other kind of entry.
func workEntries(tw *tar.Writer, archive io.Reader, uid, gid int) error {
	tr := tar.NewReader(archive)
	seen := map[string]byte{} // name → its type
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the commit's archive: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // the commit ID, as a pax comment
		}
		name := strings.TrimSuffix(h.Name, "/")
		if err := checkWorkName(name, seen); err != nil {
			return err
		}
		seen[name] = h.Typeflag
		out := &tar.Header{Name: name, Uid: uid, Gid: gid, ModTime: h.ModTime, Format: tar.FormatPAX}
		switch h.Typeflag {
		case tar.TypeDir:
			out.Typeflag, out.Name, out.Mode = tar.TypeDir, name+"/", 0o755
		case tar.TypeSymlink:
			out.Typeflag, out.Linkname, out.Mode = tar.TypeSymlink, h.Linkname, 0o777
		case tar.TypeReg:
			out.Typeflag, out.Size, out.Mode = tar.TypeReg, h.Size, 0o644
			if h.Mode&0o111 != 0 {
				out.Mode = 0o755
			}
		default:
			return fmt.Errorf("%.200q in the commit's archive is not a file, directory or link (type %q)", name, h.Typeflag)
		}
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if out.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, tr); err != nil {
				return err
			}
		}
	}
}

// checkWorkName refuses a work tree name that is not a relative path
// below /task, that has a part git takes for its metadata, that seen (the
// names before it) has already, or that lies below one of seen's links.
func checkWorkName(name string, seen map[string]byte) error {
	if !filepath.IsLocal(name) || filepath.Clean(name) != name {
		return fmt.Errorf("%.200q in the commit's archive is not a clean path below %s", name, taskDir)
	}
	if _, ok := seen[name]; ok {
		return fmt.Errorf("%.200q is twice in the commit's archive", name)
	}
	for part := range strings.SplitSeq(name, "/") {
		if strings.EqualFold(part, ".git") {
			return fmt.Errorf("%.200q in the commit's archive has a part named .git", name)
		}
	}
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if seen[dir] == tar.TypeSymlink {
			return fmt.Errorf("%.200q in the commit's archive lies below the link %.200q", name, dir)
		}
	}
	return nil
}

// tarEntry writes one entry of root/rel with the given mode and owner.
func tarEntry(tw *tar.Writer, root, rel, name string, d fs.DirEntry, mode int64, uid, gid int) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	h := &tar.Header{Name: name, Mode: mode, Uid: uid, Gid: gid, ModTime: info.ModTime()}
	p := filepath.Join(root, filepath.FromSlash(rel))
	switch {
	case d.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
		return tw.WriteHeader(h)
	case d.Type()&fs.ModeSymlink != 0:
		if h.Linkname, err = os.Readlink(p); err != nil {
			return err
		}
		h.Typeflag = tar.TypeSymlink
		return tw.WriteHeader(h)
	}
	h.Typeflag, h.Size = tar.TypeReg, info.Size()
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != h.Size {
		err = fmt.Errorf("%s changed size while it was copied", rel)
	}
	return err
}

// numericUser reads "uid:gid", which the seed needs as numbers: the tar
// names owners by number, never by a name the image may not have.
func numericUser(user string) (uid, gid int, err error) {
	u, g, ok := strings.Cut(user, ":")
	if ok {
		uid, err = strconv.Atoi(u)
		if err == nil {
			gid, err = strconv.Atoi(g)
		}
	}
	if !ok || err != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("the agent user %q is not numeric uid:gid", user)
	}
	return uid, gid, nil
}

// isCommitID reports whether s is a full lowercase SHA-1, the only form of
// commit D passes to git, where a name like "HEAD" or "-x" would mean
// something else.
func isCommitID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
