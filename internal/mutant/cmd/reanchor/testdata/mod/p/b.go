package p

// Stop caps x at Limit.
func Stop(x int) int {
	if x > Limit {
		return Limit
	}
	return settle(x)
}
