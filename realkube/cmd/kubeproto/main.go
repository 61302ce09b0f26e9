// Command kubeproto writes the protobuf descriptors of the Kubernetes API
// kinds the hub reads from protobuf request bodies, compiled from the
// generated.proto files of the Kubernetes modules pinned in this module's
// go.mod, as one FileDescriptorSet (no source info, deterministic bytes):
//
//	go run ./cmd/kubeproto OUT
//
// The hub embeds the result (node/src/kube/kubernetes-api.protoset); a test
// regenerates it and fails if the embedded copy differs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// The API group versions whose kinds the hub accepts as protobuf.
var files = []string{
	"k8s.io/api/core/v1/generated.proto",
	"k8s.io/api/apps/v1/generated.proto",
	"k8s.io/api/batch/v1/generated.proto",
	"k8s.io/api/autoscaling/v1/generated.proto",
	"k8s.io/api/autoscaling/v2/generated.proto",
	"k8s.io/api/policy/v1/generated.proto",
	"k8s.io/api/networking/v1/generated.proto",
	"k8s.io/api/rbac/v1/generated.proto",
	"k8s.io/api/storage/v1/generated.proto",
	"k8s.io/api/scheduling/v1/generated.proto",
	"k8s.io/api/coordination/v1/generated.proto",
	"k8s.io/api/discovery/v1/generated.proto",
	"k8s.io/api/events/v1/generated.proto",
	"k8s.io/api/node/v1/generated.proto",
	"k8s.io/api/certificates/v1/generated.proto",
	"k8s.io/api/authorization/v1/generated.proto",
	"k8s.io/api/authentication/v1/generated.proto",
	"k8s.io/api/admissionregistration/v1/generated.proto",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/generated.proto",
	"k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kubeproto OUT")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "kubeproto:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	roots, err := moduleDirs("k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiextensions-apiserver")
	if err != nil {
		return err
	}
	compiler := protocompile.Compiler{
		Resolver: &protocompile.SourceResolver{Accessor: func(path string) (io.ReadCloser, error) {
			for module, dir := range roots {
				if rest, ok := strings.CutPrefix(path, module+"/"); ok {
					return os.Open(filepath.Join(dir, rest))
				}
			}
			return nil, fmt.Errorf("%s: not in a pinned Kubernetes module", path)
		}},
		SourceInfoMode: protocompile.SourceInfoNone,
	}
	compiled, err := compiler.Compile(context.Background(), files...)
	if err != nil {
		return err
	}
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(protoreflect.FileDescriptor)
	add = func(file protoreflect.FileDescriptor) {
		if seen[file.Path()] {
			return
		}
		seen[file.Path()] = true
		imports := file.Imports()
		for i := 0; i < imports.Len(); i++ {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(file))
	}
	for _, file := range compiled {
		add(file)
	}
	bytes, err := proto.MarshalOptions{Deterministic: true}.Marshal(set)
	if err != nil {
		return err
	}
	return os.WriteFile(out, bytes, 0o644)
}

// moduleDirs finds the source directories of the pinned modules.
func moduleDirs(modules ...string) (map[string]string, error) {
	dirs := map[string]string{}
	for _, module := range modules {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
		if err != nil {
			return nil, fmt.Errorf("go list -m %s: %w", module, err)
		}
		dirs[module] = strings.TrimSpace(string(out))
	}
	return dirs, nil
}
