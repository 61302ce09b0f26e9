package main

import (
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// embeddedEtcd is a one-member etcd inside this process.
type embeddedEtcd struct {
	server    *embed.Etcd
	clientURL string
}

// startEtcd starts etcd on kernel-chosen loopback ports. The peer port is
// never dialled (one member) but etcd insists on listening on one.
func startEtcd(dir string) (*embeddedEtcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Name = "realkube"
	loopback := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{loopback}
	cfg.AdvertiseClientUrls = []url.URL{loopback}
	cfg.ListenPeerUrls = []url.URL{loopback}
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "http", Host: "127.0.0.1:2380"}}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	// The HTTP gateway would dial the configured (port 0) address; nothing uses it.
	cfg.EnableGRPCGateway = false
	cfg.LogOutputs = []string{"stderr"}
	// Tests start and stop many clusters: keep the database small.
	cfg.QuotaBackendBytes = 2 << 30
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"

	server, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-server.Server.ReadyNotify():
	case err := <-server.Err():
		server.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		server.Close()
		return nil, fmt.Errorf("not ready within 60s")
	}
	return &embeddedEtcd{
		server:    server,
		clientURL: "http://" + server.Clients[0].Addr().String(),
	}, nil
}

func (e *embeddedEtcd) Close() { e.server.Close() }
