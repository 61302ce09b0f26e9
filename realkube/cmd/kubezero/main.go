// Command kubezero writes the fields of the Kubernetes API's Go types that
// Go's JSON encoding leaves out when they hold their zero value: scalar
// (bool, integer, float) fields that are not pointers and are tagged
// omitempty. Protobuf writes those fields even when zero, and cannot tell
// them from pointer fields set to zero (which JSON keeps), so the hub reads
// a protobuf body's zero values through this list. One line per field,
// sorted: the protobuf message's full name and the field's protobuf name.
//
//	go run ./cmd/kubezero OUT
//
// The hub embeds the result (node/src/kube/kubernetes-api-omitempty.txt);
// a test regenerates it and fails if the embedded copy differs.
package main

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kubezero OUT")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "kubezero:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	types := runtime.NewScheme()
	if err := scheme.AddToScheme(types); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(types); err != nil {
		return err
	}
	fields := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for {
			switch t.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Array:
				t = t.Elem()
				continue
			case reflect.Map:
				walk(t.Key())
				t = t.Elem()
				continue
			}
			break
		}
		if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() == "" {
			return
		}
		seen[t] = true
		message := strings.ReplaceAll(strings.ReplaceAll(t.PkgPath(), "/", "."), "-", "_") + "." + t.Name()
		for i := 0; i < t.NumField(); i++ {
			field := t.Field(i)
			walk(field.Type)
			name := protobufName(field.Tag.Get("protobuf"))
			if name == "" || !strings.Contains(field.Tag.Get("json"), ",omitempty") {
				continue
			}
			switch field.Type.Kind() {
			case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
				reflect.Float32, reflect.Float64:
				fields[message+" "+name] = true
			}
		}
	}
	for _, t := range types.AllKnownTypes() {
		walk(t)
	}
	lines := make([]string, 0, len(fields))
	for line := range fields {
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// protobufName is the name= part of a protobuf struct tag.
func protobufName(tag string) string {
	for _, part := range strings.Split(tag, ",") {
		if name, ok := strings.CutPrefix(part, "name="); ok {
			return name
		}
	}
	return ""
}
