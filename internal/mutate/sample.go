package mutate

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
)

// Sample picks n mutants deterministically for seed: each mutant's rank is
// a hash of the seed and its stable ID, and the n lowest ranks are taken.
// The same seed and the same code give the same list, and a mutant added
// or removed elsewhere leaves the rest of the choice as it was. The sample
// is returned in the order of ms; n ≤ 0 or n ≥ len(ms) takes them all.
func Sample(ms []Mutant, seed int64, n int) []Mutant {
	if n <= 0 || n >= len(ms) {
		return append([]Mutant(nil), ms...)
	}
	type ranked struct {
		i    int
		rank uint64
	}
	rs := make([]ranked, len(ms))
	for i, m := range ms {
		h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", seed, m.ID)))
		rs[i] = ranked{i, binary.BigEndian.Uint64(h[:8])}
	}
	sort.Slice(rs, func(a, b int) bool {
		if rs[a].rank != rs[b].rank {
			return rs[a].rank < rs[b].rank
		}
		return rs[a].i < rs[b].i
	})
	rs = rs[:n]
	sort.Slice(rs, func(a, b int) bool { return rs[a].i < rs[b].i })
	out := make([]Mutant, n)
	for k, r := range rs {
		out[k] = ms[r.i]
	}
	return out
}
