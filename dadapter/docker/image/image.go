// Package image makes the local images the Docker adapter runs, offline:
// the engine has no registry to pull from, so every image is a root
// filesystem tarred in memory and loaded with the Engine API's image import
// (POST /images/create?fromSrc=-), its configuration (entrypoint, command,
// user, working directory, environment, labels) given as import "changes".
//
// Images are named by content: the same files and configuration always give
// the same tag, and Build does nothing when an image with that content is
// already tagged. The helper image the adapter's task-storage containers run
// (Helper) is built from binaries on the host; see HelperFiles.
//
// It may import the standard library and the moby client (and its api
// types); nothing of codeboost's.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// ContentLabel is the image label that carries the content digest
// ("sha256:" and 64 hex digits) of the root filesystem tar and the
// configuration an image was imported from. Build compares it to decide
// that an import is not needed. Containers inherit their image's labels, so
// every container made from an image of this package carries it too.
const ContentLabel = "io.codeboost.image.content"

// File is one entry of an image's root filesystem. Exactly one of a regular
// file (the default), a directory (Dir) or a symbolic link (Link != "") is
// meant; Data is only read for a regular file.
type File struct {
	Path string // absolute and clean, e.g. "/usr/bin/git"; never "/"
	// Mode is the Unix permission bits with setuid, setgid and sticky
	// (0o7777), as in tar; 0 means 0o644 for a file, 0o755 for a directory
	// and 0o777 for a link.
	Mode     int64
	UID, GID int
	Data     []byte // a regular file's content
	Link     string // non-empty: a symbolic link pointing there (taken as is)
	Dir      bool   // a directory
}

// Config is the image's run configuration, turned into import changes.
// Empty fields are left unset.
type Config struct {
	Entrypoint []string // exec form
	Cmd        []string // exec form
	User       string   // "uid", "uid:gid" or a name from /etc/passwd
	WorkingDir string
	Env        []string          // "KEY=value"
	Labels     map[string]string // besides ContentLabel, which Build sets
}

// epoch is every entry's modification time, so that the same files give
// the same tar, the same digest and the same tag.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// prepared is an image ready to import: its tar, the digest that names it
// and the import changes (ContentLabel's included).
type prepared struct {
	tar     []byte
	digest  string // "sha256:" + 64 hex digits, over the tar and the changes
	changes []string
}

// tag is the 12 hex digits of the digest an image is tagged with.
func (p *prepared) tag() string { return strings.TrimPrefix(p.digest, "sha256:")[:12] }

func prepare(files []File, cfg Config) (*prepared, error) {
	tarball, err := archive(files)
	if err != nil {
		return nil, err
	}
	changes, err := changes(cfg)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write(tarball)
	for _, c := range changes {
		h.Write([]byte{0})
		h.Write([]byte(c))
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	changes = append(changes, "LABEL "+quote(ContentLabel)+"="+quote(digest))
	return &prepared{tar: tarball, digest: digest, changes: changes}, nil
}

// ContentRef is the reference an image made of files and cfg is tagged
// with when it is named by content: name, a colon and 12 hex digits of its
// content digest (ContentLabel).
func ContentRef(name string, files []File, cfg Config) (string, error) {
	p, err := prepare(files, cfg)
	if err != nil {
		return "", err
	}
	return name + ":" + p.tag(), nil
}

// Build makes the image of files and cfg and tags it ref, returning its ID.
// When ref already names an image whose ContentLabel matches, it returns
// that image's ID and imports nothing, so calling Build again is cheap
// (one inspect). Otherwise it imports the image, which moves ref; an image
// ref named before is left in place, untagged.
//
// Two processes building the same ref at once both import; the second tag
// wins, and both images have the same content.
func Build(ctx context.Context, cli *client.Client, ref string, files []File, cfg Config) (imageID string, err error) {
	p, err := prepare(files, cfg)
	if err != nil {
		return "", err
	}
	return build(ctx, cli, ref, p)
}

func build(ctx context.Context, cli *client.Client, ref string, p *prepared) (string, error) {
	if id, ok, err := existing(ctx, cli, ref, p.digest); err != nil || ok {
		return id, err
	}
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(p.tar), SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: p.changes, Message: "codeboost " + p.digest})
	if err != nil {
		return "", fmt.Errorf("import image %s: %w", ref, err)
	}
	err = importResult(res)
	res.Close()
	if err != nil {
		return "", fmt.Errorf("import image %s: %w", ref, err)
	}
	id, ok, err := existing(ctx, cli, ref, p.digest)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("import image %s: the daemon reported success, but %s does not carry label %s=%s", ref, ref, ContentLabel, p.digest)
	}
	return id, nil
}

// existing reports the ID of the image ref names if it carries digest.
func existing(ctx context.Context, cli *client.Client, ref, digest string) (string, bool, error) {
	img, err := cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	if img.Config == nil || img.Config.Labels[ContentLabel] != digest {
		return "", false, nil
	}
	return img.ID, true, nil
}

// importResult reads the import's JSON message stream to its end and
// returns the error it reports, if any: the daemon answers 200 and reports
// a failed import inside the stream.
func importResult(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the daemon's answer: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}

// archive writes files as a tar, sorted by path, with every missing parent
// directory added (root's, mode 0755) and every time set to epoch, so that
// the same files always give the same bytes.
func archive(files []File) ([]byte, error) {
	byPath := map[string]File{}
	for _, f := range files {
		if f.Path == "/" || !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("image file path %q: want an absolute, clean path other than /", f.Path)
		}
		if f.Dir && f.Link != "" {
			return nil, fmt.Errorf("image file %s: both a directory and a link", f.Path)
		}
		if _, dup := byPath[f.Path]; dup {
			return nil, fmt.Errorf("image file %s: listed twice", f.Path)
		}
		byPath[f.Path] = f
	}
	for _, f := range files {
		for dir := path.Dir(f.Path); dir != "/"; dir = path.Dir(dir) {
			if parent, ok := byPath[dir]; !ok {
				byPath[dir] = File{Path: dir, Dir: true}
			} else if !parent.Dir {
				return nil, fmt.Errorf("image file %s: its parent %s is not a directory", f.Path, dir)
			}
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		f := byPath[p]
		hdr := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: f.Mode, Uid: f.UID, Gid: f.GID, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
			if hdr.Mode == 0 {
				hdr.Mode = 0o755
			}
		case f.Link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
			if hdr.Mode == 0 {
				hdr.Mode = 0o777
			}
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Data))
			if hdr.Mode == 0 {
				hdr.Mode = 0o644
			}
		}
		if hdr.Mode&^0o7777 != 0 {
			return nil, fmt.Errorf("image file %s: mode %#o has bits beyond 0o7777", p, hdr.Mode)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("image file %s: %w", p, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("image file %s: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// plain is what USER and WORKDIR may hold without quoting: the daemon reads
// changes as Dockerfile lines, with quotes and variables expanded.
var plain = regexp.MustCompile(`^[A-Za-z0-9_./:@+-]+$`)

// changes turns cfg into Dockerfile instructions for the import, in a fixed
// order.
func changes(cfg Config) ([]string, error) {
	var out []string
	for _, c := range []struct {
		name string
		argv []string
	}{{"ENTRYPOINT", cfg.Entrypoint}, {"CMD", cfg.Cmd}} {
		if len(c.argv) == 0 {
			continue
		}
		for _, a := range c.argv {
			if strings.ContainsAny(a, "\n\r") {
				return nil, fmt.Errorf("image %s %q: a line break cannot be imported", c.name, a)
			}
		}
		b, err := json.Marshal(c.argv)
		if err != nil {
			return nil, err
		}
		out = append(out, c.name+" "+string(b))
	}
	for _, c := range []struct{ name, value string }{{"USER", cfg.User}, {"WORKDIR", cfg.WorkingDir}} {
		if c.value == "" {
			continue
		}
		if !plain.MatchString(c.value) {
			return nil, fmt.Errorf("image %s %q: only letters, digits and _./:@+- are allowed", c.name, c.value)
		}
		out = append(out, c.name+" "+c.value)
	}
	for _, kv := range cfg.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || !plain.MatchString(k) {
			return nil, fmt.Errorf("image ENV %q: want KEY=value", kv)
		}
		if strings.ContainsAny(v, "\n\r") {
			return nil, fmt.Errorf("image ENV %s: a line break cannot be imported", k)
		}
		out = append(out, "ENV "+k+"="+quote(v))
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Labels)) {
		v := cfg.Labels[k]
		if k == ContentLabel {
			return nil, fmt.Errorf("image label %s is Build's own", k)
		}
		if k == "" || strings.ContainsAny(k+v, "\n\r") {
			return nil, fmt.Errorf("image label %q=%q: want a non-empty key and no line breaks", k, v)
		}
		out = append(out, "LABEL "+quote(k)+"="+quote(v))
	}
	return out, nil
}

// quote writes s as a double-quoted Dockerfile word: backslash, double
// quote and dollar escaped, so that the daemon neither splits it nor
// expands variables in it.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '\\' || r == '"' || r == '$' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
