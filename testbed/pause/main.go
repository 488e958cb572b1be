// The node tier's sandbox ("pause") image: sleeps until SIGTERM or SIGINT and reaps
// orphaned children, as a pod's infrastructure container does. Built static by
// scripts/build-node and imported under containerd's default sandbox image name.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			if pid, _ := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}
