package metrics

import "time"

// SetIdleTimeout sets the idle timeout of servers Listen makes from now on;
// the function it returns restores the old value.
func SetIdleTimeout(d time.Duration) (restore func()) {
	old := idleTimeout
	idleTimeout = d
	return func() { idleTimeout = old }
}
