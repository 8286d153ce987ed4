package image

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/moby/moby/client"
)

// Host paths the images are made from. Production needs both on the host:
// the busybox-static package's binary and git (with the shared libraries it
// links).
const (
	HostBusybox = "/bin/busybox"
	HostGit     = "/usr/bin/git"
)

// HelperName is the repository the helper image is tagged in; its tag is
// its content (ContentRef).
const HelperName = "codeboost-helper"

// AgentUID and AgentGID are the user and group agents and the helper's
// storage containers run as; /task and /meta belong to them.
const (
	AgentUID = 1000
	AgentGID = 1000
)

// Applets are the busybox commands BaseFiles links in /bin: what the
// storage containers' scripts (keeper, seeder, export, commit) use.
var Applets = []string{
	"[", "awk", "base64", "basename", "cat", "chmod", "cp", "cut", "date", "dirname", "du", "echo", "env",
	"false", "find", "grep", "gzip", "head", "id", "kill", "ln", "ls", "mkdir", "mktemp", "mv", "printf",
	"readlink", "realpath", "rm", "rmdir", "sed", "sh", "sha256sum", "sleep", "sort", "stat", "tail",
	"tar", "tee", "test", "timeout", "touch", "tr", "true", "uniq", "wc", "xargs",
}

// HelperConfig is the helper image's configuration: a PATH and no command
// of its own; every storage container names its script.
func HelperConfig() Config { return Config{Env: []string{"PATH=/usr/bin:/bin"}} }

// Helper builds (once; see Build) the helper image task storage runs in,
// the keeper, seeder, export, inspect, tree-check and commit containers,
// and returns its reference, HelperName tagged by content.
//
// The image is HelperFiles: busybox and git taken from the host. Host git
// with its shared libraries was chosen over a git written in Go or a git
// image because it gives real git semantics (diff, status and the notices a
// person reads are git's own), works offline on an engine with no registry,
// and adds no dependency to the module. The price is that production needs
// the busybox-static and git packages on the host, and an image rebuilt
// when either is upgraded (its tag changes with its content).
func Helper(ctx context.Context, cli *client.Client) (ref string, err error) {
	files, err := HelperFiles()
	if err != nil {
		return "", err
	}
	p, err := prepare(files, HelperConfig())
	if err != nil {
		return "", err
	}
	ref = HelperName + ":" + p.tag()
	if _, err := build(ctx, cli, ref, p); err != nil {
		return "", err
	}
	return ref, nil
}

// BaseFiles is the root filesystem every image of the adapter's starts
// from: HostBusybox at /bin/busybox with Applets linked beside it (and
// /usr/bin/env), /etc/passwd and /etc/group naming root and agent
// (AgentUID:AgentGID, home /tmp), /tmp (1777), and /task and /meta owned by
// agent, mode 0755. A fresh named volume mounted on a directory the image
// has takes that directory's owner, so the agent can write a new /task
// volume without a root step.
func BaseFiles() ([]File, error) {
	bb, err := readStatic(HostBusybox)
	if err != nil {
		return nil, err
	}
	files := []File{
		{Path: "/bin/busybox", Mode: 0o755, Data: bb},
		{Path: "/usr/bin/env", Link: "/bin/busybox"},
		{Path: "/etc/passwd", Data: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/bin/sh\nagent:x:%d:%d:agent:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
			AgentUID, AgentGID))},
		{Path: "/etc/group", Data: []byte(fmt.Sprintf("root:x:0:\nagent:x:%d:\nnogroup:x:65534:\n", AgentGID))},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/task", Dir: true, Mode: 0o755, UID: AgentUID, GID: AgentGID},
		{Path: "/meta", Dir: true, Mode: 0o755, UID: AgentUID, GID: AgentGID},
	}
	for _, a := range Applets {
		files = append(files, File{Path: "/bin/" + a, Link: "busybox"})
	}
	return files, nil
}

// HelperFiles is the helper image's root filesystem: BaseFiles, HostGit at
// /usr/bin/git, every shared library `ldd` names for it and its program
// interpreter, each copied as a regular file at the path the loader looks
// for it, and git's templates (without the sample hooks) so that `git
// init` does not warn. /usr/lib/git-core is left out: git runs its own
// subcommands (pack-objects for a bundle, say) as `git` from PATH when its
// exec path is missing.
func HelperFiles() ([]File, error) {
	files, err := BaseFiles()
	if err != nil {
		return nil, err
	}
	git, err := os.ReadFile(HostGit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the helper image needs git at %s: install the git package", HostGit)
	} else if err != nil {
		return nil, fmt.Errorf("the helper image needs git: %w", err)
	}
	files = append(files, File{Path: "/usr/bin/git", Mode: 0o755, Data: git})
	libs, err := sharedLibraries(HostGit)
	if err != nil {
		return nil, err
	}
	for _, lib := range libs {
		resolved, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return nil, fmt.Errorf("git's library %s: %w", lib, err)
		}
		data, err := os.ReadFile(resolved)
		if err != nil {
			return nil, fmt.Errorf("git's library %s: %w", lib, err)
		}
		files = append(files, File{Path: lib, Mode: 0o755, Data: data})
	}
	templates, err := gitTemplates("/usr/share/git-core/templates")
	if err != nil {
		return nil, err
	}
	return append(files, templates...), nil
}

// readStatic reads a statically linked executable: a dynamic busybox (the
// busybox package rather than busybox-static) would not start in an image
// without its libraries.
func readStatic(p string) ([]byte, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the images need a static busybox at %s: install the busybox-static package", p)
	} else if err != nil {
		return nil, fmt.Errorf("the images need a static busybox: %w", err)
	}
	if interp, err := interpreter(data); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	} else if interp != "" {
		return nil, fmt.Errorf("%s is dynamically linked (%s): install the busybox-static package", p, interp)
	}
	return data, nil
}

// interpreter is an ELF executable's program interpreter (PT_INTERP),
// empty for a static executable.
func interpreter(data []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("not an ELF executable: %w", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return "", err
			}
			return strings.TrimRight(string(b), "\x00"), nil
		}
	}
	return "", nil
}

// sharedLibraries lists the absolute paths of the shared libraries exe
// needs, as `ldd` resolves them, and its program interpreter; none for a
// static executable.
func sharedLibraries(exe string) ([]string, error) {
	data, err := os.ReadFile(exe)
	if err != nil {
		return nil, err
	}
	interp, err := interpreter(data)
	if err != nil || interp == "" {
		return nil, err
	}
	out, err := exec.Command("ldd", exe).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return nil, fmt.Errorf("ldd %s: %v %s", exe, err, bytes.TrimSpace(stderr))
	}
	libs := []string{interp}
	seen := map[string]bool{interp: true}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x…)",
		// "/lib64/ld-linux-x86-64.so.2 (0x…)", "linux-vdso.so.1 (0x…)".
		line := strings.TrimSpace(sc.Text())
		if _, after, ok := strings.Cut(line, "=>"); ok {
			line = strings.TrimSpace(after)
		}
		lib, _, _ := strings.Cut(line, " ")
		if strings.Contains(line, "not found") {
			return nil, fmt.Errorf("ldd %s: a library is missing: %s", exe, sc.Text())
		}
		if !path.IsAbs(lib) || seen[lib] {
			continue
		}
		seen[lib] = true
		libs = append(libs, path.Clean(lib))
	}
	return libs, nil
}

// gitTemplates copies git's template directory (what `git init` puts in a
// new .git), without hooks/: none is installed by default and the samples
// are never run. A host without the directory gives none.
func gitTemplates(dir string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "hooks" {
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := File{Path: p, Mode: int64(info.Mode().Perm())}
		switch {
		case d.IsDir():
			f.Dir = true
		case d.Type()&fs.ModeSymlink != 0:
			if f.Link, err = os.Readlink(p); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if f.Data, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return nil
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("git's templates: %w", err)
	}
	return files, nil
}
