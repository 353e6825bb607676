// k8svalidate decodes every object of the given multi-document YAML files as the API server
// would: into the k8s.io/api type its apiVersion and kind name, strictly (an unknown,
// misspelled or duplicated field is an error, as kubectl's --validate=strict and the server's
// fieldValidation=Strict report it). An object of a kind this program does not register is an
// error too, so a manifest cannot slip a typo in its kind past it.
//
//	k8svalidate [-json OUT] FILE...
//
// Prints one line per object ("ok apps/v1 DaemonSet ns/name") and one per problem; exits 1
// if there was any problem, 2 on usage errors. -json writes each decoded object, as the
// typed object encodes it, one JSON document a line, for tests to assert on (jq).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
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
func checkFile(path string, decoder runtime.Decoder, out io.Writer) int {
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
		if err := checkObject(raw, decoder, out); err != nil {
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

func checkObject(raw []byte, decoder runtime.Decoder, out io.Writer) error {
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
	if out == nil {
		return nil
	}
	// The typed object drops apiVersion and kind; put them back for the reader.
	encoded, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var fields map[string]any
	if err := json.Unmarshal(encoded, &fields); err != nil {
		return err
	}
	fields["apiVersion"], fields["kind"] = gvk.GroupVersion().String(), gvk.Kind
	line, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", line)
	return err
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
	jsonOut := flag.String("json", "", "write the decoded objects to this file, one a line")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: k8svalidate [-json OUT] FILE...")
		os.Exit(2)
	}
	var out io.Writer
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
		out = f
	}
	codecs := serializer.NewCodecFactory(newScheme(), serializer.EnableStrict)
	decoder := codecs.UniversalDeserializer()
	problems := 0
	for _, path := range flag.Args() {
		problems += checkFile(path, decoder, out)
	}
	if problems > 0 {
		fmt.Printf("%d problems\n", problems)
		os.Exit(1)
	}
}
