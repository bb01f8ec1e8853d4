package host

import "time"

// clock is the wall clock the SDK reads: the host's, through WASI, unless a test fixes it.
var clock = time.Now

// Now is the time by the SDK's clock.
func Now() time.Time {
	return clock()
}

// SetClock makes the SDK's clock read now; nil restores the real one.
func SetClock(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	clock = now
}
