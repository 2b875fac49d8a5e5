package leakcheck

// block waits for stop. It lives outside the _test.go files so that
// TestLeakedSeesAGoroutine has a goroutine in non-test code to find.
func block(stop <-chan struct{}) { <-stop }
