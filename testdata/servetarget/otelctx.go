package main

// The OpenTelemetry process context (OTEP 4719) as an SDK publishes it:
// -otel-ctx "service.name=checkout,service.instance.id=abc" puts those
// resource attributes in a memfd named OTEL_CTX, mapped shared, header first
// and the payload (an opentelemetry.proto.resource.v1.Resource) after it, the
// signature written last; readers find it in /proc/<pid>/maps. Stdlib only
// (raw system calls), so it builds with every toolchain the tests use.

import (
	"encoding/binary"
	"flag"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

var otelCtx = flag.String("otel-ctx", "", "publish these key=value,... resource attributes as OTEL_CTX")

// Keeps the mapping referenced for the process's life.
var otelCtxPage []byte

// protobuf: a length-delimited field.
func pbBytes(field int, b []byte) []byte {
	var n [binary.MaxVarintLen64]byte
	out := append([]byte{byte(field<<3 | 2)}, n[:binary.PutUvarint(n[:], uint64(len(b)))]...)
	return append(out, b...)
}

// Resource{attributes: [KeyValue{key, value: AnyValue{string_value}}...]}.
func resourcePayload(spec string) []byte {
	var res []byte
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		keyValue := append(pbBytes(1, []byte(k)), pbBytes(2, pbBytes(1, []byte(v)))...)
		res = append(res, pbBytes(1, keyValue)...)
	}
	return res
}

func publishOtelContext(spec string) error {
	name := []byte("OTEL_CTX\x00")
	fd, _, errno := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])), 0, 0)
	if errno != 0 {
		return fmt.Errorf("memfd_create: %v", errno)
	}
	defer syscall.Close(int(fd))
	if err := syscall.Ftruncate(int(fd), 4096); err != nil {
		return err
	}
	page, err := syscall.Mmap(int(fd), 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return err
	}
	payload := resourcePayload(spec)
	copy(page[32:], payload)
	binary.LittleEndian.PutUint32(page[8:], 2)
	binary.LittleEndian.PutUint32(page[12:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(page[16:], uint64(time.Now().UnixNano()))
	binary.LittleEndian.PutUint64(page[24:], uint64(uintptr(unsafe.Pointer(&page[32]))))
	// The signature last, after a store barrier (an atomic store orders the
	// plain stores before it).
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&page[0])), binary.LittleEndian.Uint64([]byte("OTEL_CTX")))
	otelCtxPage = page
	return nil
}
