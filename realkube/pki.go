package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the paths of the credentials one control plane runs on. They are
// made once per data directory and reused on restart, so clients keep
// trusting a restarted cluster.
type pki struct {
	dir         string
	caCert      string
	caKey       string
	serverCert  string
	serverKey   string
	adminCert   string
	adminKey    string
	saPublic    string
	saPrivate   string
	caCertPEM   []byte
	adminPEM    []byte
	adminKeyPEM []byte
}

const certValidity = 10 * 365 * 24 * time.Hour

// loadOrCreatePKI makes (or finds) a CA, the API server's serving certificate,
// an admin client certificate in system:masters, and the service-account
// signing key pair.
func loadOrCreatePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		dir:        dir,
		caCert:     filepath.Join(dir, "ca.crt"),
		caKey:      filepath.Join(dir, "ca.key"),
		serverCert: filepath.Join(dir, "apiserver.crt"),
		serverKey:  filepath.Join(dir, "apiserver.key"),
		adminCert:  filepath.Join(dir, "admin.crt"),
		adminKey:   filepath.Join(dir, "admin.key"),
		saPublic:   filepath.Join(dir, "sa.pub"),
		saPrivate:  filepath.Join(dir, "sa.key"),
	}
	if !exists(p.adminKey) {
		if err := p.create(); err != nil {
			return nil, fmt.Errorf("creating credentials in %s: %w", dir, err)
		}
	}
	var err error
	if p.caCertPEM, err = os.ReadFile(p.caCert); err != nil {
		return nil, err
	}
	if p.adminPEM, err = os.ReadFile(p.adminCert); err != nil {
		return nil, err
	}
	if p.adminKeyPEM, err = os.ReadFile(p.adminKey); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *pki) create() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "realkube-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writeCert(p.caCert, caDER); err != nil {
		return err
	}
	if err := writeECKey(p.caKey, caKey); err != nil {
		return err
	}

	server := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		DNSNames: []string{
			"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP(serviceIP)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if err := p.issue(server, ca, caKey, p.serverCert, p.serverKey); err != nil {
		return err
	}
	admin := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "realkube-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := p.issue(admin, ca, caKey, p.adminCert, p.adminKey); err != nil {
		return err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(p.saPublic, "PUBLIC KEY", pub); err != nil {
		return err
	}
	return writePEM(p.saPrivate, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))
}

func (p *pki) issue(t *x509.Certificate, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	t.NotBefore = time.Now().Add(-time.Hour)
	t.NotAfter = time.Now().Add(certValidity)
	t.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writeCert(certPath, der); err != nil {
		return err
	}
	return writeECKey(keyPath, key)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func writeCert(path string, der []byte) error { return writePEM(path, "CERTIFICATE", der) }

func writeECKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, kind string, der []byte) error {
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

// writeFileAtomic writes through a temporary file and a rename, so a reader
// (or a crash) never sees half a file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
