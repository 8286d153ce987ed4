package mutate

import (
	"strings"
	"unicode"
)

// whereTerms finds, in the source text of a string literal, an UPDATE's
// WHERE clause with two or more AND-joined terms and no top-level OR, and
// returns each term's [start, end) offsets in lit. A clause it cannot read
// plainly (BETWEEN, an unbalanced quote or parenthesis) gives nothing.
func whereTerms(lit string) [][2]int {
	up := findWord(lit, "UPDATE", 0)
	if up < 0 {
		return nil
	}
	where := findWord(lit, "WHERE", up)
	if where < 0 || depthAt(lit, up, where) != 0 {
		return nil
	}
	start := where + len("WHERE")
	end := len(lit)
	if q := lit[len(lit)-1]; q == '`' || q == '"' {
		end--
	}
	for _, stop := range []string{"RETURNING", "ORDER", "LIMIT", ";"} {
		var i int
		if stop == ";" {
			i = strings.IndexByte(lit[start:end], ';')
			if i >= 0 {
				i += start
			}
		} else {
			i = findWord(lit[:end], stop, start)
		}
		if i >= 0 && i < end {
			end = i
		}
	}
	clause := lit[start:end]
	if findWord(clause, "BETWEEN", 0) >= 0 {
		return nil
	}
	// Split at AND outside parentheses and quotes.
	var cuts [][2]int // AND keyword spans, relative to clause
	depth, quoted := 0, false
	for i := 0; i < len(clause); i++ {
		c := clause[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return nil
			}
		case depth == 0 && isWordAt(clause, i, "AND"):
			cuts = append(cuts, [2]int{i, i + 3})
			i += 2
		case depth == 0 && isWordAt(clause, i, "OR"):
			return nil
		}
	}
	if depth != 0 || quoted || len(cuts) == 0 {
		return nil
	}
	var terms [][2]int
	from := 0
	for _, c := range append(cuts, [2]int{len(clause), len(clause)}) {
		a, b := trimSpan(clause, from, c[0])
		if a >= b {
			return nil
		}
		terms = append(terms, [2]int{start + a, start + b})
		from = c[1]
	}
	return terms
}

// findWord finds word (any case) as a whole word in s at or after from.
func findWord(s, word string, from int) int {
	for i := from; i+len(word) <= len(s); i++ {
		if isWordAt(s, i, word) {
			return i
		}
	}
	return -1
}

func isWordAt(s string, i int, word string) bool {
	if i+len(word) > len(s) || !strings.EqualFold(s[i:i+len(word)], word) {
		return false
	}
	if i > 0 && isWordByte(s[i-1]) {
		return false
	}
	return i+len(word) == len(s) || !isWordByte(s[i+len(word)])
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 0x80 || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}

// depthAt is the parenthesis depth at offset to, counting from offset from.
func depthAt(s string, from, to int) int {
	d := 0
	for _, c := range s[from:to] {
		switch c {
		case '(':
			d++
		case ')':
			d--
		}
	}
	return d
}

func trimSpan(s string, a, b int) (int, int) {
	for a < b && unicode.IsSpace(rune(s[a])) {
		a++
	}
	for b > a && unicode.IsSpace(rune(s[b-1])) {
		b--
	}
	return a, b
}
