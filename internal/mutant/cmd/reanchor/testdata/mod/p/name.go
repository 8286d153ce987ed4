package p

import "strings"

// Name is a trimmed name.
func Name(s string) string {
	return strings.TrimSpace(s)
}

// Label is a name in upper case.
func Label(s string) string {
	return strings.ToUpper(Name(s))
}
