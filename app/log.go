package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The log formats of --log-format.
const (
	LogText = "text" // the default: one plain line per record, for a person
	LogJSON = "json" // one JSON object per record, for a machine
)

// NewLogger returns the logger for a --log-format, writing to w. "text"
// writes "codeboost: <message>" and the attributes the message does not
// already name (see textHandler); "json" is slog's JSON handler: time,
// level, msg and every attribute as a field. Debug records are dropped.
func NewLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case LogText, "":
		return slog.New(&textHandler{mu: &sync.Mutex{}, w: w}), nil
	case LogJSON:
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})), nil
	}
	return nil, fmt.Errorf("unknown log format %q (text or json)", format)
}

// textHandler writes each record as one line for a person at a terminal:
// "codeboost: <message>", then " key=value" for each attribute whose value
// the message does not already contain as a word. So "runner owner <token>"
// with owner=<token> stays one plain sentence, while the JSON format keeps
// the token as a field. There is no time (the terminal or the journal adds
// its own) and no level: what a person must act on says so in its words.
type textHandler struct {
	mu     *sync.Mutex // shared by every handler derived from one NewLogger; guards w
	w      io.Writer
	prefix string      // "group." for attributes added under WithGroup
	attrs  []slog.Attr // from WithAttrs, keys already prefixed
}

func (h *textHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *textHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		a.Key = h.prefix + a.Key
		c.attrs = append(c.attrs, a)
	}
	return &c
}

func (h *textHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}

func (h *textHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("codeboost: ")
	b.WriteString(r.Message)
	for _, a := range h.attrs {
		appendAttr(&b, r.Message, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, r.Message, h.prefix, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// appendAttr writes one attribute (a group's attributes, flattened as
// group.key), unless the message already names its value.
func appendAttr(b *strings.Builder, msg, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if a.Key == "" && v.Kind() != slog.KindGroup {
		return // slog's rule: an attribute with no key is ignored
	}
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			appendAttr(b, msg, p, g)
		}
		return
	}
	s := v.String()
	if containsWord(msg, s) {
		return
	}
	b.WriteByte(' ')
	b.WriteString(prefix + a.Key)
	b.WriteByte('=')
	b.WriteString(quoteIfNeeded(s))
}

// containsWord reports whether s occurs in msg with no letter, digit, '-'
// or '_' right before or after it.
func containsWord(msg, s string) bool {
	if s == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(msg[i:], s)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(s)
		before, _ := utf8.DecodeLastRuneInString(msg[:start])
		after, _ := utf8.DecodeRuneInString(msg[end:])
		if (start == 0 || !isWordRune(before)) && (end == len(msg) || !isWordRune(after)) {
			return true
		}
		i = start + 1
	}
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_'
}

// quoteIfNeeded quotes a value that is empty or has a space, '=', a quote
// or an unprintable character, so that each line splits unambiguously.
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '=' || r == '"' || !unicode.IsPrint(r)
	}) {
		return strconv.Quote(s)
	}
	return s
}
