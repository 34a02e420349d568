package cli

import "syscall"

// On Linux CMD gets SIGKILL when sluice dies, even by SIGKILL or the OOM
// killer. The signal follows the thread that started CMD, and Go never
// ends its threads unless a goroutine locked to one exits, which sluice
// lock does not do.
func init() {
	parentDeath = func(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
}
