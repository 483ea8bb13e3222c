//go:build linux

package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel SIGKILL cmd when baton itself dies, even
// by SIGKILL: a command run under a lock never outlives the process whose
// session holds the lock, and a worker's command never handles a message
// that is being delivered again elsewhere.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
