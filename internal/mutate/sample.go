package mutate

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
)

// Sample picks n mutants deterministically for seed, spread over the
// packages in proportion to their mutant counts: package p gets
// n·|p|/|ms| places, rounded by largest remainder (ties to the package
// that sorts first), so that a package's share of the sample is its share
// of the mutants and its score is measured on a sample of known size.
// Within a package each mutant's rank is a hash of the seed and its stable
// ID, and the lowest ranks are taken. The same seed and the same code give
// the same list, and a mutant added or removed elsewhere leaves the rest of
// the choice as it was (bar a place moving between packages). The sample
// is returned in the order of ms; n ≤ 0 or n ≥ len(ms) takes them all.
func Sample(ms []Mutant, seed int64, n int) []Mutant {
	if n <= 0 || n >= len(ms) {
		return append([]Mutant(nil), ms...)
	}
	type ranked struct {
		i    int
		rank uint64
	}
	byPkg := map[string][]ranked{}
	var pkgs []string
	for i, m := range ms {
		p := PackageOf(m.ID)
		if _, ok := byPkg[p]; !ok {
			pkgs = append(pkgs, p)
		}
		h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", seed, m.ID)))
		byPkg[p] = append(byPkg[p], ranked{i, binary.BigEndian.Uint64(h[:8])})
	}
	sort.Strings(pkgs)
	quota := Spread(pkgs, func(p string) int { return len(byPkg[p]) }, n)
	var take []int
	for _, p := range pkgs {
		rs := byPkg[p]
		sort.Slice(rs, func(a, b int) bool {
			if rs[a].rank != rs[b].rank {
				return rs[a].rank < rs[b].rank
			}
			return rs[a].i < rs[b].i
		})
		for _, r := range rs[:quota[p]] {
			take = append(take, r.i)
		}
	}
	sort.Ints(take)
	out := make([]Mutant, len(take))
	for k, i := range take {
		out[k] = ms[i]
	}
	return out
}

// Spread divides n places among keys in proportion to size(key), by
// largest remainder; ties go to the key earlier in keys.
func Spread(keys []string, size func(string) int, n int) map[string]int {
	total := 0
	for _, k := range keys {
		total += size(k)
	}
	out := map[string]int{}
	if total == 0 {
		return out
	}
	type rem struct {
		k string
		r int // n·size mod total
		i int
	}
	var rs []rem
	left := n
	for i, k := range keys {
		out[k] = n * size(k) / total
		left -= out[k]
		rs = append(rs, rem{k, n * size(k) % total, i})
	}
	sort.Slice(rs, func(a, b int) bool {
		if rs[a].r != rs[b].r {
			return rs[a].r > rs[b].r
		}
		return rs[a].i < rs[b].i
	})
	for j := 0; j < left; j++ {
		out[rs[j].k]++
	}
	return out
}
