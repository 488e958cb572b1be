// The node tier's DRA driver: the upstream e2e test driver's kubelet plugin
// (k8s.io/kubernetes/test/e2e/dra/test-driver/app), started with devices read from a
// JSON file of resource.k8s.io/v1 Device objects, so a test decides their attributes,
// capacity and nodeAllocatableResources. It registers with the kubelet, publishes one
// ResourceSlice for its node and prepares claims by writing CDI specs, like a real driver.
// Built by scripts/build-node; test code only.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/e2e/dra/test-driver/app"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the driver's identity")
	nodeName := flag.String("node-name", "", "the node this plugin serves")
	driverName := flag.String("driver-name", "node.kubectl-dra.test", "DRA driver name")
	cdiDir := flag.String("cdi-dir", "/var/run/cdi", "where prepared claims' CDI specs go")
	devicesFile := flag.String("devices", "", "JSON list of resource.k8s.io/v1 Device objects to publish")
	flag.Parse()
	if err := run(*kubeconfig, *nodeName, *driverName, *cdiDir, *devicesFile); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, nodeName, driverName, cdiDir, devicesFile string) error {
	if nodeName == "" || devicesFile == "" {
		return fmt.Errorf("--node-name and --devices are required")
	}
	raw, err := os.ReadFile(devicesFile)
	if err != nil {
		return err
	}
	var devices []resourceapi.Device
	if err := json.Unmarshal(raw, &devices); err != nil {
		return fmt.Errorf("%s: %w", devicesFile, err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	resources := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		nodeName: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
	plugin, err := app.StartPlugin(ctx, cdiDir, driverName, client, nodeName,
		app.FileOperations{DriverResources: &resources})
	if err != nil {
		return err
	}
	fmt.Printf("plugin %s started on node %s with %d devices\n", driverName, nodeName, len(devices))
	<-ctx.Done()
	plugin.Stop()
	return nil
}
