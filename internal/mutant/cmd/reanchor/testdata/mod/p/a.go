package p

// Admit admits when there is room.
func Admit(used, max int) bool {
	if used >= max {
		return false
	}
	return true
}

func settle(n int) int {
	if n < 0 {
		n = 0
	}
	return n
}

// Limit caps Stop.
const Limit = 3
