// Command realkube runs a real Kubernetes control plane in one process for
// Fleet's tests and for trying Fleet locally: an embedded etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler built from the
// official modules, and KWOK faking a few Nodes so Pods are scheduled and
// become Ready without kubelets. Everything listens on loopback ports chosen
// by the kernel. It writes an admin kubeconfig, prints one line when the
// cluster is ready, and stops cleanly on SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// options are the command line of realkube.
type options struct {
	dataDir    string
	name       string
	kubeconfig string
	nodes      int
	nodeCPU    string
	nodeMemory string
	nodePods   string
	nodeLabels string
	verbosity  int
	auditLog   string
	unpullable string
}

func parseOptions(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("realkube", flag.ContinueOnError)
	fs.StringVar(&o.dataDir, "data-dir", "", "directory for etcd's data, credentials, kubeconfigs and logs (required)")
	fs.StringVar(&o.name, "name", "realkube", "cluster name used in the kubeconfig's cluster, user and context")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "where to write the admin kubeconfig (default DATA_DIR/kubeconfig)")
	fs.IntVar(&o.nodes, "nodes", 2, "number of fake Nodes KWOK keeps Ready")
	fs.StringVar(&o.nodeCPU, "node-cpu", "8", "cpu capacity and allocatable of each fake Node")
	fs.StringVar(&o.nodeMemory, "node-memory", "32Gi", "memory capacity and allocatable of each fake Node")
	fs.StringVar(&o.nodePods, "node-pods", "110", "pod capacity of each fake Node")
	fs.StringVar(&o.nodeLabels, "node-labels", "", "extra labels of every fake Node, as k=v,k2=v2")
	fs.IntVar(&o.verbosity, "v", 0, "log verbosity of the Kubernetes components")
	fs.StringVar(&o.auditLog, "audit-log", "", "write the API server's audit log (every request at Metadata level, JSON lines) to this file")
	fs.StringVar(&o.unpullable, "unpullable-images", "", "images no registry serves, as img,img2: their Pods stay Pending, not Ready, with ErrImagePull, as a kubelet leaves them")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.dataDir == "" {
		return nil, errors.New("--data-dir is required")
	}
	if o.nodes < 0 {
		return nil, fmt.Errorf("--nodes %d: must be 0 or more", o.nodes)
	}
	abs, err := filepath.Abs(o.dataDir)
	if err != nil {
		return nil, err
	}
	o.dataDir = abs
	if o.kubeconfig == "" {
		o.kubeconfig = filepath.Join(o.dataDir, "kubeconfig")
	}
	return o, nil
}

// unpullableImages is --unpullable-images as a list.
func (o *options) unpullableImages() []string {
	var out []string
	for _, image := range strings.Split(o.unpullable, ",") {
		if image = strings.TrimSpace(image); image != "" {
			out = append(out, image)
		}
	}
	return out
}

func main() {
	opts, err := parseOptions(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "realkube:", err)
		os.Exit(2)
	}
	// The first signal stops the cluster in order; a second one exits at once.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-ctx.Done()
		stop()
		again := make(chan os.Signal, 1)
		signal.Notify(again, syscall.SIGTERM, syscall.SIGINT)
		<-again
		os.Exit(1)
	}()
	if err := run(ctx, opts); err != nil {
		klog.Flush()
		fmt.Fprintln(os.Stderr, "realkube:", err)
		os.Exit(1)
	}
	klog.Flush()
}

func run(ctx context.Context, o *options) error {
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return err
	}
	setupLogging(o.verbosity)
	creds, err := loadOrCreatePKI(filepath.Join(o.dataDir, "pki"))
	if err != nil {
		return err
	}

	etcd, err := startEtcd(filepath.Join(o.dataDir, "etcd"))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()

	// Components stop in reverse order of start: KWOK, the scheduler and the
	// controller manager first, then the API server, then etcd.
	components, cancelComponents := context.WithCancel(context.Background())
	defer cancelComponents()
	apiCtx, cancelAPI := context.WithCancel(context.Background())
	defer cancelAPI()
	failed := make(chan error, 5)
	done := &running{}

	auditArgs, err := auditFlags(o)
	if err != nil {
		return err
	}
	api, err := newAPIServer(creds, etcd.clientURL, auditArgs)
	if err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	done.start("kube-apiserver", failed, func() error { return api.run(apiCtx) })

	adminKubeconfig := filepath.Join(o.dataDir, "admin.kubeconfig")
	if err := writeKubeconfig(adminKubeconfig, o.name, api.url, creds); err != nil {
		cancelAPI()
		return err
	}
	client, err := waitForAPIServer(ctx, adminKubeconfig, failed)
	if err != nil {
		cancelAPI()
		done.wait()
		return err
	}

	done.start("kube-controller-manager", failed, func() error {
		return runControllerManager(components, adminKubeconfig, creds)
	})
	done.start("kube-scheduler", failed, func() error { return runScheduler(components, adminKubeconfig) })
	done.start("kwok", failed, func() error { return runKWOK(components, o.dataDir, adminKubeconfig, o.unpullableImages()) })
	done.start("provisioner", failed, func() error { return runProvisioner(components, client, o.dataDir) })

	err = prepareCluster(ctx, client, o, failed)
	if err == nil {
		if err = writeKubeconfig(o.kubeconfig, o.name, api.url, creds); err == nil {
			fmt.Printf("realkube: ready kubeconfig=%s server=%s\n", o.kubeconfig, api.url)
			select {
			case <-ctx.Done():
			case err = <-failed:
			}
		}
	}

	cancelComponents()
	done.waitFor("kube-controller-manager", "kube-scheduler", "kwok", "provisioner")
	cancelAPI()
	done.wait()
	return err
}

// auditFlags are the API server's flags for --audit-log: every request's
// metadata (who, verb, resource, user agent, code), so tests and benchmarks
// can count what a client asked for.
func auditFlags(o *options) ([]string, error) {
	if o.auditLog == "" {
		return nil, nil
	}
	path, err := filepath.Abs(o.auditLog)
	if err != nil {
		return nil, err
	}
	policy := filepath.Join(o.dataDir, "audit-policy.yaml")
	const everything = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
	if err := writeFileAtomic(policy, []byte(everything), 0o600); err != nil {
		return nil, err
	}
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + path, "--audit-log-format=json", "--audit-log-mode=blocking"}, nil
}

// running tracks the components' goroutines so shutdown can wait for them.
type running struct {
	names map[string]chan struct{}
}

func (r *running) start(name string, failed chan<- error, fn func() error) {
	if r.names == nil {
		r.names = map[string]chan struct{}{}
	}
	finished := make(chan struct{})
	r.names[name] = finished
	go func() {
		defer close(finished)
		if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
			select {
			case failed <- fmt.Errorf("%s: %w", name, err):
			default:
			}
		}
	}()
}

// waitFor waits (bounded) for the named components to return.
func (r *running) waitFor(names ...string) {
	deadline := time.After(30 * time.Second)
	for _, name := range names {
		if finished, ok := r.names[name]; ok {
			select {
			case <-finished:
			case <-deadline:
				klog.Warningf("realkube: %s did not stop within 30s", name)
				return
			}
		}
	}
}

func (r *running) wait() {
	names := make([]string, 0, len(r.names))
	for name := range r.names {
		names = append(names, name)
	}
	r.waitFor(names...)
}
