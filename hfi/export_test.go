package hfi

import "time"

// MaxErrsPerWindow is maxErrsPerWindow, for the external tests.
const MaxErrsPerWindow = maxErrsPerWindow

// SetErrorsOffFor sets how long the breaker keeps a flood's errors off
// (errorsOffFor), for tests.
func (u *UDP) SetErrorsOffFor(d time.Duration) {
	u.perr.mu.Lock()
	defer u.perr.mu.Unlock()
	u.perr.offFor = d
}
