// Command pause is the pod sandbox of tests/e2e/containerd_test.sh: what
// registry.k8s.io/pause is to a kubelet's pods (the process that holds the
// pod's namespaces), built by the test so that no image is ever pulled. It
// waits for SIGTERM or SIGINT and exits 0.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
