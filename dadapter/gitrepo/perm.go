package gitrepo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ensureOwnerOnly creates root and then each directory from root down to
// dir, with mode 0700, where missing, and checks every one of them. root may
// be reached through a symbolic link (the user chose it); below it, a link
// is refused, since it could lead anywhere.
func ensureOwnerOnly(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("%s is not under %s", dir, root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(root)
	if err != nil {
		return err
	}
	if err := checkOwnerOnly(root, fi); err != nil {
		return err
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		if err := os.Mkdir(cur, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		fi, err := os.Lstat(cur)
		if err != nil {
			return err
		}
		if err := checkOwnerOnly(cur, fi); err != nil {
			return err
		}
	}
	return nil
}

// checkOwnerOnly accepts a directory owned by the effective user (the owner
// of everything this process creates) that nobody else may write.
func checkOwnerOnly(path string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot read its owner", path)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%w: %s is owned by uid %d, not the current uid %d", ErrNotOwnerOnly, path, st.Uid, uid)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %#o)", ErrNotOwnerOnly, path, perm)
	}
	return nil
}
