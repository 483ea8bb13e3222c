package sessions

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// HostIdentity is hostIdentity, replaceable by tests that simulate
// processes on other hosts.
var HostIdentity = hostIdentity

// hostIdentity names this boot and PID namespace: two processes with the
// same identity see the same PIDs, so one can tell whether the other is
// alive. Empty when it cannot be known.
func hostIdentity() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// processAlive reports whether a process with this PID exists. Only a
// definite "no such process" counts as dead: a PID that was reused, or that
// belongs to another user, keeps the session until its lease runs out.
func processAlive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return !errors.Is(err, syscall.ESRCH)
}
