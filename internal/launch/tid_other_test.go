//go:build unix && !linux

package launch_test

// Only Linux ties the parent-death signal to a thread.
func gettid() int { return 0 }
