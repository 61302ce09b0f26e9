package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"k8s.io/apiserver/pkg/util/compatibility"
)

// The Service network of every realkube cluster; the first address is the
// `kubernetes` Service, which the serving certificate names.
const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"
)

// setupLogging sends klog (every component's logger) to stderr at the given
// verbosity; stdout carries only the ready line.
func setupLogging(verbosity int) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "true")
	_ = fs.Set("v", strconv.Itoa(verbosity))
}

// parseFlags parses a component's production flag sets, so its defaults and
// validation are exactly those of the real binary.
func parseFlags(name string, sets cliflag.NamedFlagSets, args []string) error {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	for _, set := range sets.FlagSets {
		fs.AddFlagSet(set)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s flags: %w", name, err)
	}
	return nil
}

// apiServer is a configured kube-apiserver with its listener already bound.
type apiServer struct {
	options apiserveroptions.CompletedOptions
	url     string
}

func newAPIServer(creds *pki, etcdURL string, extraArgs []string) (*apiServer, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := listener.Addr().(*net.TCPAddr).Port
	s := apiserveroptions.NewServerRunOptions()
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--advertise-address=127.0.0.1",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + creds.serverCert,
		"--tls-private-key-file=" + creds.serverKey,
		"--client-ca-file=" + creds.caCert,
		"--service-account-key-file=" + creds.saPublic,
		"--service-account-signing-key-file=" + creds.saPrivate,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--profiling=false",
		"--endpoint-reconciler-type=none",
	}
	args = append(args, extraArgs...)
	if err := parseFlags("kube-apiserver", s.Flags(), args); err != nil {
		listener.Close()
		return nil, err
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		listener.Close()
		return nil, err
	}
	s.SecureServing.Listener = listener
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	completed, err := s.Complete(context.Background())
	if err != nil {
		listener.Close()
		return nil, err
	}
	if errs := completed.Validate(); len(errs) != 0 {
		listener.Close()
		return nil, fmt.Errorf("invalid options: %v", errs)
	}
	return &apiServer{options: completed, url: fmt.Sprintf("https://127.0.0.1:%d", port)}, nil
}

func (a *apiServer) run(ctx context.Context) error { return apiserverapp.Run(ctx, a.options) }

// waitForAPIServer polls /readyz until the API server serves, and returns an
// admin client.
func waitForAPIServer(ctx context.Context, kubeconfig string, failed <-chan error) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	deadline, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last error
	err = wait.PollUntilContextCancel(deadline, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-failed:
			return false, err
		default:
		}
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			last = fmt.Errorf("%w: %s", err, body)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver not ready: %w (last answer: %v)", err, last)
	}
	return client, nil
}

func runControllerManager(ctx context.Context, kubeconfig string, creds *pki) error {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	all, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	sets := s.Flags(all, disabled, aliases)
	s.ParsedFlags = &sets
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--service-account-private-key-file=" + creds.saPrivate,
		"--root-ca-file=" + creds.caCert,
		"--cluster-signing-cert-file=" + creds.caCert,
		"--cluster-signing-key-file=" + creds.caKey,
		"--use-service-account-credentials=true",
		"--profiling=false",
	}
	if err := parseFlags("kube-controller-manager", sets, args); err != nil {
		return err
	}
	if err := compatibility.DefaultComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	c, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return err
	}
	return kcmapp.Run(ctx, c.Complete())
}

func runScheduler(ctx context.Context, kubeconfig string) error {
	opts := scheduleroptions.NewOptions()
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--profiling=false",
	}
	if err := parseFlags("kube-scheduler", *opts.Flags, args); err != nil {
		return err
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	cc, sched, err := schedulerapp.Setup(ctx, opts)
	if err != nil {
		return err
	}
	return schedulerapp.Run(ctx, cc, sched)
}

// writeKubeconfig writes a kubeconfig for the admin certificate, with the
// credentials inline so the file can be copied anywhere.
func writeKubeconfig(path, name, server string, creds *pki) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: creds.caCertPEM}
	cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: creds.adminPEM,
		ClientKeyData:         creds.adminKeyPEM,
	}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	cfg.CurrentContext = name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data, 0o600)
}
