// Package ids checks and makes the identifiers the contract names: attempt,
// action and allocation IDs (lowercase UUID v4) and the runner owner token
// (32 lowercase hex). Every stored or received ID passes these checks before
// it is used anywhere, including as a directory name or a Docker label.
//
// IDs come from an injected Source so that the simulator can seed it and a
// trace is byte-for-byte repeatable.
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"regexp"
	"sync"
)

var (
	uuidRE  = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	tokenRE = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// ValidUUID reports whether s is a lowercase UUID v4, the contract's only
// accepted form for attempt, action and allocation IDs.
func ValidUUID(s string) bool { return len(s) == 36 && uuidRE.MatchString(s) }

// ValidToken reports whether s is a runner owner token.
func ValidToken(s string) bool { return len(s) == 32 && tokenRE.MatchString(s) }

// CheckUUID returns a bounded error naming what was refused.
func CheckUUID(what, s string) error {
	if ValidUUID(s) {
		return nil
	}
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Errorf("%s %q is not a lowercase UUID v4", what, s)
}

// Source makes new IDs.
type Source interface {
	UUID() string  // a lowercase UUID v4
	Token() string // 32 lowercase hex
}

// Random is the production Source, backed by crypto/rand.
type Random struct{}

func (Random) UUID() string {
	var b [16]byte
	rand.Read(b[:])
	return format(b)
}

func (Random) Token() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Seeded is a deterministic Source for the simulator.
type Seeded struct {
	mu  sync.Mutex
	rng *mrand.Rand
}

// NewSeeded returns a Source whose IDs depend only on seed.
func NewSeeded(seed uint64) *Seeded {
	return &Seeded{rng: mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (s *Seeded) bytes() (b [16]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range b {
		b[i] = byte(s.rng.UintN(256))
	}
	return b
}

func (s *Seeded) UUID() string { return format(s.bytes()) }

func (s *Seeded) Token() string {
	b := s.bytes()
	return hex.EncodeToString(b[:])
}

func format(b [16]byte) string {
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
