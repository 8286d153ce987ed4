package gitrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
)

// These tests run the host's git on real temporary directories. The
// fixtures are made with a fixed author, committer and date, so every commit
// ID repeats from run to run.

const owner = "0123456789abcdef0123456789abcdef"

// hostGit runs git for a fixture, in an environment of its own, and returns
// its trimmed output.
func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := hostGitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(out)
}

func hostGitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com",
		"GIT_AUTHOR_DATE=2024-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2024-01-02T03:04:05Z",
		"LC_ALL=C",
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// userRepo is a user's repository: main is c1 → c2 → c3, the annotated tag
// v1 points at c2, and lost is a commit on c3 that no ref reaches.
type userRepo struct {
	dir               string
	c1, c2, c3, lost  string
	tagObject, c3Tree string
}

func newUserRepo(t *testing.T) userRepo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "user")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u := userRepo{dir: dir}
	hostGit(t, dir, "init", "-q", "-b", "main")
	commit := func(file, content, msg string) string {
		write(t, filepath.Join(dir, file), content)
		hostGit(t, dir, "add", "--", file)
		hostGit(t, dir, "commit", "-q", "-m", msg)
		return hostGit(t, dir, "rev-parse", "HEAD")
	}
	u.c1 = commit("a.txt", "one\n", "c1")
	u.c2 = commit("a.txt", "two\n", "c2")
	hostGit(t, dir, "tag", "-a", "-m", "v1", "v1")
	u.tagObject = hostGit(t, dir, "rev-parse", "v1")
	u.c3 = commit("b.txt", "three\n", "c3")
	u.c3Tree = hostGit(t, dir, "rev-parse", "HEAD^{tree}")
	hostGit(t, dir, "checkout", "-q", "--detach")
	u.lost = commit("a.txt", "lost\n", "lost")
	hostGit(t, dir, "checkout", "-q", "main")
	hostGit(t, dir, "reflog", "expire", "--expire=all", "--all")
	return u
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// openRepo opens a runner-owned repository for u under a fresh runner root.
func openRepo(t *testing.T, u userRepo) *Repo {
	t.Helper()
	r, err := Open(context.Background(), t.TempDir(), owner, u.dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// groups is an onGroup that counts the process groups reported to it.
type groups struct {
	mu   sync.Mutex
	list []dadapter.ProcessGroup
}

func (g *groups) on(pg dadapter.ProcessGroup) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.list = append(g.list, pg)
}

func (g *groups) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.list)
}

// digest hashes every name, mode, modification time and content under dir,
// so that any write shows.
func digest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", path, fi.Mode(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%d %x\n", len(b), sha256.Sum256(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// refsIn lists every ref of a bare repository, and FETCH_HEAD if present.
func refsIn(t *testing.T, bare string) []string {
	t.Helper()
	var refs []string
	if out := hostGit(t, bare, "for-each-ref", "--format=%(refname)"); out != "" {
		refs = strings.Split(out, "\n")
	}
	if _, err := os.Stat(filepath.Join(bare, "FETCH_HEAD")); err == nil {
		refs = append(refs, "FETCH_HEAD")
	}
	return refs
}

func hasObject(dir, id string) bool {
	_, err := hostGitErr(dir, "cat-file", "-e", id)
	return err == nil
}
