package launch_test

import "syscall"

func gettid() int { return syscall.Gettid() }
