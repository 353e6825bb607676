// k8svalidate decodes every object of the given multi-document YAML files as the API server
// would: into the k8s.io/api type its apiVersion and kind name, strictly (an unknown,
// misspelled or duplicated field is an error, as kubectl's --validate=strict and the server's
// fieldValidation=Strict report it). An object of a kind this program does not register is an
// error too, so a manifest cannot slip a typo in its kind past it.
//
//	k8svalidate FILE...
//
// Prints one line per object ("ok apps/v1 DaemonSet ns/name") and one per problem; exits 1
// if there was any problem, 2 on usage errors.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The API groups a manifest of this project may use.
func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, networkingv1.AddToScheme,
		policyv1.AddToScheme, rbacv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return scheme
}

// checkFile decodes each document of path and returns how many problems it found.
func checkFile(path string, decoder runtime.Decoder) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Println("problem:", err)
		return 1
	}
	defer f.Close()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	problems, objects := 0, 0
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Printf("problem: %s: document %d: %v\n", path, doc, err)
			return problems + 1
		}
		if isEmpty(raw) {
			continue
		}
		objects++
		if err := checkObject(raw, decoder); err != nil {
			fmt.Printf("problem: %s: document %d: %v\n", path, doc, err)
			problems++
		}
	}
	if objects == 0 {
		fmt.Printf("problem: %s: no object\n", path)
		problems++
	}
	return problems
}

func checkObject(raw []byte, decoder runtime.Decoder) error {
	// An unregistered kind fails here ("no kind ... is registered"); an unknown or
	// duplicated field fails as a strict decoding error.
	obj, gvk, err := decoder.Decode(raw, nil, nil)
	if err != nil {
		return err
	}
	object, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	fmt.Printf("ok %s %s %s/%s\n", gvk.GroupVersion(), gvk.Kind, object.GetNamespace(),
		object.GetName())
	return nil
}

func isEmpty(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: k8svalidate FILE...")
		os.Exit(2)
	}
	codecs := serializer.NewCodecFactory(newScheme(), serializer.EnableStrict)
	decoder := codecs.UniversalDeserializer()
	problems := 0
	for _, path := range os.Args[1:] {
		problems += checkFile(path, decoder)
	}
	if problems > 0 {
		fmt.Printf("%d problems\n", problems)
		os.Exit(1)
	}
}
