// Command crds prints CustomResourceDefinitions that KubeFleet and Open
// Cluster Management publish in their Go modules, so tests can install
// Fleet's kinds on a real kube-apiserver without the repository keeping a
// copy of their YAML. The modules are pinned in realkube's go.mod; their
// directories in the module cache come from `go list -m -json`.
//
// Usage: go run ./cmd/crds NAME... (e.g. clusterresourceplacements.placement.kubernetes-fleet.io);
// the named CRDs are printed as one multi-document YAML stream.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	// These imports pin the modules whose CRD files are read, so that
	// `go mod tidy` keeps them in go.mod and go.sum; the programs use no code
	// from them. KubeFleet is pinned at the release Fleet follows (v0.1.2).
	_ "github.com/kubefleet-dev/kubefleet/pkg/utils/resource"
	_ "open-cluster-management.io/api/cluster/v1beta1"
)

// sources are the modules and the directories in them that hold CRD YAML.
var sources = []struct{ module, dir string }{
	{"github.com/kubefleet-dev/kubefleet", "config/crd/bases"},
	{"open-cluster-management.io/api", "cluster/v1beta1"},
	{"open-cluster-management.io/api", "cluster/v1"},
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "crds:", err)
		os.Exit(1)
	}
}

func run(names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("name at least one CRD, e.g. clusterresourceplacements.placement.kubernetes-fleet.io")
	}
	found := map[string][]byte{}
	for _, source := range sources {
		root, err := moduleDir(source.module)
		if err != nil {
			return err
		}
		files, err := filepath.Glob(filepath.Join(root, source.dir, "*.yaml"))
		if err != nil {
			return err
		}
		for _, file := range files {
			text, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(text, &head); err != nil || head.Kind != "CustomResourceDefinition" {
				continue
			}
			found[head.Metadata.Name] = text
		}
	}
	var missing []string
	var out bytes.Buffer
	for _, name := range names {
		text, ok := found[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		out.WriteString("---\n")
		out.Write(text)
		if !bytes.HasSuffix(text, []byte("\n")) {
			out.WriteString("\n")
		}
	}
	if len(missing) > 0 {
		known := make([]string, 0, len(found))
		for name := range found {
			known = append(known, name)
		}
		sort.Strings(known)
		return fmt.Errorf("no CRD named %s in the pinned modules; known: %s", strings.Join(missing, ", "), strings.Join(known, ", "))
	}
	_, err := os.Stdout.Write(out.Bytes())
	return err
}

// moduleDir is where the build list's version of module is unpacked.
func moduleDir(module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-json", module)
	cmd.Stderr = os.Stderr
	text, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(text, &info); err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	if info.Dir == "" {
		return "", fmt.Errorf("module %s is not in the module cache (go mod download %s)", module, module)
	}
	return info.Dir, nil
}
