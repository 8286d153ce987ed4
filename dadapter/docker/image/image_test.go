package image_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter/docker/dockertest"
	"github.com/codeboost/codeboost/dadapter/docker/image"
)

// TestContentRef: the tag is the content, whatever order the files come in,
// and any change of a file or the configuration changes it.
func TestContentRef(t *testing.T) {
	files := []image.File{
		{Path: "/a/b/c.txt", Data: []byte("c")},
		{Path: "/a/link", Link: "b/c.txt"},
		{Path: "/task", Dir: true, UID: 1000, GID: 1000},
	}
	cfg := image.Config{Entrypoint: []string{"/agent"}, Env: []string{"A=1"}}
	ref := func(files []image.File, cfg image.Config) string {
		t.Helper()
		r, err := image.ContentRef("x", files, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := ref(files, cfg)
	if !strings.HasPrefix(want, "x:") || len(want) != len("x:")+12 {
		t.Fatalf("ContentRef = %q, want x:<12 hex>", want)
	}
	reversed := slices.Clone(files)
	slices.Reverse(reversed)
	if got := ref(reversed, cfg); got != want {
		t.Errorf("reversed files: %s, want %s", got, want)
	}
	changed := slices.Clone(files)
	changed[2].UID = 0
	for name, got := range map[string]string{
		"owner":      ref(changed, cfg),
		"env":        ref(files, image.Config{Entrypoint: []string{"/agent"}, Env: []string{"A=2"}}),
		"entrypoint": ref(files, image.Config{Env: []string{"A=1"}}),
		"label":      ref(files, image.Config{Entrypoint: []string{"/agent"}, Env: []string{"A=1"}, Labels: map[string]string{"k": "v"}}),
	} {
		if got == want {
			t.Errorf("changing the %s kept the tag %s", name, got)
		}
	}
}

// TestContentRefRejects: what cannot be imported faithfully is an error,
// not a surprise in the image.
func TestContentRefRejects(t *testing.T) {
	for name, c := range map[string]struct {
		files []image.File
		cfg   image.Config
	}{
		"relative path":    {files: []image.File{{Path: "a"}}},
		"unclean path":     {files: []image.File{{Path: "/a/../b"}}},
		"root":             {files: []image.File{{Path: "/", Dir: true}}},
		"twice":            {files: []image.File{{Path: "/a"}, {Path: "/a"}}},
		"parent not dir":   {files: []image.File{{Path: "/a"}, {Path: "/a/b"}}},
		"mode":             {files: []image.File{{Path: "/a", Mode: 0o10644}}},
		"env without =":    {cfg: image.Config{Env: []string{"A"}}},
		"env line break":   {cfg: image.Config{Env: []string{"A=1\nRUN x"}}},
		"user with space":  {cfg: image.Config{User: "a b"}},
		"workdir variable": {cfg: image.Config{WorkingDir: "/$HOME"}},
		"content label":    {cfg: image.Config{Labels: map[string]string{image.ContentLabel: "x"}}},
	} {
		if _, err := image.ContentRef("x", c.files, c.cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestBaseFiles: the base image's ownership and modes, read back from the
// tar Build would import.
func TestBaseFiles(t *testing.T) {
	files, err := image.BaseFiles()
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]image.File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	for _, c := range []struct {
		path     string
		mode     int64
		uid, gid int
	}{{"/task", 0o755, 1000, 1000}, {"/meta", 0o755, 1000, 1000}, {"/tmp", 0o1777, 0, 0}, {"/bin/busybox", 0o755, 0, 0}} {
		f := byPath[c.path]
		if f.Mode != c.mode || f.UID != c.uid || f.GID != c.gid {
			t.Errorf("%s: mode %#o %d:%d, want %#o %d:%d", c.path, f.Mode, f.UID, f.GID, c.mode, c.uid, c.gid)
		}
	}
	if !strings.Contains(string(byPath["/etc/passwd"].Data), "agent:x:1000:1000:") {
		t.Errorf("/etc/passwd has no agent:\n%s", byPath["/etc/passwd"].Data)
	}
}

// TestHelperFiles: git comes with every library it loads, as regular files.
func TestHelperFiles(t *testing.T) {
	files, err := image.HelperFiles()
	if err != nil {
		t.Fatal(err)
	}
	var libs []string
	for _, f := range files {
		if strings.Contains(f.Path, ".so") {
			if f.Link != "" || f.Dir || len(f.Data) == 0 {
				t.Errorf("%s is not a regular file with content", f.Path)
			}
			libs = append(libs, f.Path)
		}
	}
	if !slices.ContainsFunc(libs, func(p string) bool { return strings.Contains(p, "ld-linux") }) {
		t.Errorf("no program interpreter among %v", libs)
	}
	t.Logf("git's libraries: %v", libs)
}

// TestHelperImage runs git in the helper image the way the storage
// containers do: user 1000, read-only root, tmpfs /tmp, no network.
func TestHelperImage(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Serial(t)
	t.Cleanup(func() { dockertest.NoLeaks(t, cli) }) // after the test's own cleanups
	ctx := context.Background()

	start := time.Now()
	ref := dockertest.HelperImage(t, cli)
	first := time.Since(start)
	id1 := imageID(t, cli, ref)

	start = time.Now()
	ref2, err := image.Helper(ctx, cli)
	again := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if ref2 != ref || imageID(t, cli, ref2) != id1 {
		t.Fatalf("second build: %s (%s), want %s (%s)", ref2, imageID(t, cli, ref2), ref, id1)
	}
	t.Logf("helper %s: first build %v, second (no import) %v", ref, first.Round(time.Millisecond), again.Round(time.Millisecond))

	sh := func(script string) dockertest.Output {
		t.Helper()
		out := dockertest.Run(t, cli, &container.Config{Image: ref, User: "1000:1000", Cmd: []string{"sh", "-c", script}},
			dockertest.Sandbox(), time.Minute)
		if out.ExitCode != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", out.ExitCode, out.Stdout, out.Stderr)
		}
		return out
	}

	if out := sh("git --version"); !strings.HasPrefix(out.Stdout, "git version ") {
		t.Errorf("git --version: %q", out.Stdout)
	}

	out := sh(`set -e
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.invalid
git init -q /tmp/r && cd /tmp/r
printf 'one\n' > a.txt
git add a.txt
git commit -q -m one
printf 'two\n' >> a.txt
printf 'new\n' > b.txt
echo '--- diff'; git diff
echo '--- status'; git status --porcelain
git add -A
echo '--- ls-files'; git ls-files
tree=$(git write-tree)
commit=$(git commit-tree -p HEAD -m two "$tree")
git branch next "$commit"
git bundle create -q /tmp/b.bundle next ^HEAD
git bundle list-heads /tmp/b.bundle | grep -q "^$commit refs/heads/next" && echo '--- bundle ok'
echo '--- root'; touch /x 2>/dev/null && echo writable || echo read-only
echo '--- id'; id -u; stat -c '%u:%g %a' /task /meta; stat -c '%a' /tmp`)
	for _, want := range []string{"+two", "?? b.txt", " M a.txt", "a.txt\nb.txt\n", "--- bundle ok\n", "--- root\nread-only", "--- id\n1000\n1000:1000 755\n1000:1000 755\n1777\n"} {
		if !strings.Contains(out.Stdout, want) {
			t.Errorf("git script output lacks %q:\n%s\nstderr:\n%s", want, out.Stdout, out.Stderr)
		}
	}
	if strings.TrimSpace(out.Stderr) != "" {
		t.Logf("git script stderr:\n%s", out.Stderr)
	}

	t.Run("VolumeTakesOwnership", func(t *testing.T) {
		// A fresh named volume mounted on /task takes the image's owner of
		// /task, so the agent (1000) can write it with no root step.
		v, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Labels: map[string]string{dockertest.TestLabel: t.Name()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := cli.VolumeRemove(context.Background(), v.Volume.Name, client.VolumeRemoveOptions{}); err != nil {
				t.Errorf("remove volume: %v", err)
			}
		})
		host := dockertest.Sandbox()
		host.Mounts = []mount.Mount{{Type: mount.TypeVolume, Source: v.Volume.Name, Target: "/task"}}
		out := dockertest.Run(t, cli, &container.Config{Image: ref, User: "1000:1000",
			Cmd: []string{"sh", "-c", "stat -c '%u:%g %a' /task && echo hi > /task/f && cat /task/f"}}, host, time.Minute)
		if out.ExitCode != 0 || out.Stdout != "1000:1000 755\nhi\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", out.ExitCode, out.Stdout, out.Stderr)
		}
	})
}

// TestBuildConfig: every kind of change reaches the image as written, a
// value with quotes, spaces, a dollar and a backslash included.
func TestBuildConfig(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Serial(t)
	t.Cleanup(func() { dockertest.NoLeaks(t, cli) }) // after the test's own cleanups
	ctx := context.Background()
	files, err := image.BaseFiles()
	if err != nil {
		t.Fatal(err)
	}
	odd := `x y "q" $HOME \back 'single'`
	cfg := image.Config{
		Entrypoint: []string{"/bin/sh", "-c"},
		Cmd:        []string{`echo "$ODD"; pwd; id -u`},
		User:       "1000:1000",
		WorkingDir: "/task",
		Env:        []string{"PATH=/bin", "ODD=" + odd},
		Labels:     map[string]string{"org.example.odd": odd},
	}
	ref, err := image.ContentRef("codeboost-imagetest", files, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	id, err := image.Build(ctx, cli, ref, files, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s (%d files) in %v", ref, len(files), time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { dockertest.RemoveImage(t, cli, ref) })
	t.Cleanup(func() { dockertest.RemoveImage(t, cli, id) }) // untagged below, once its container is gone

	img, err := cli.ImageInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	c := img.Config
	if !slices.Equal(c.Entrypoint, cfg.Entrypoint) || !slices.Equal(c.Cmd, cfg.Cmd) || c.User != cfg.User ||
		c.WorkingDir != cfg.WorkingDir || !slices.Equal(c.Env, cfg.Env) || c.Labels["org.example.odd"] != odd ||
		!strings.HasPrefix(c.Labels[image.ContentLabel], "sha256:") {
		t.Errorf("image config %+v, want %+v", c, cfg)
	}
	out := dockertest.Run(t, cli, &container.Config{Image: ref}, dockertest.Sandbox(), time.Minute)
	if want := odd + "\n/task\n1000\n"; out.Stdout != want {
		t.Errorf("stdout %q, want %q (stderr %q)", out.Stdout, want, out.Stderr)
	}

	// The same ref with other content is imported again and moves.
	cfg.Cmd = []string{"true"}
	id2, err := image.Build(ctx, cli, ref, files, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if id2 == id {
		t.Errorf("new content under the same ref kept image %s", id)
	}
}

// TestArchiveReadsBack: the tar's entries, parents first, with their
// owners and modes, as the daemon will see them (read through
// export_test.go's Archive).
func TestArchiveReadsBack(t *testing.T) {
	tarball, err := image.Archive([]image.File{{Path: "/task/x", Data: []byte("x"), UID: 1000, GID: 1000}, {Path: "/bin/sh", Link: "busybox"}})
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(tarball))
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %c %#o %d:%d %s", h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Linkname))
	}
	want := []string{"bin/ 5 0755 0:0 ", "bin/sh 2 0777 0:0 busybox", "task/ 5 0755 0:0 ", "task/x 0 0644 1000:1000 "}
	if !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
}

func imageID(t *testing.T, cli *client.Client, ref string) string {
	t.Helper()
	img, err := cli.ImageInspect(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return img.ID
}
