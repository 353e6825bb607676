// Command profcheck validates gzipped pprof heap profiles and prints their
// totals, for tests/e2e/consistency_test.sh. It decodes profile.proto by hand
// (the test data modules have no dependencies) and checks what a consumer
// relies on: well-formed wire format, string_table[0] == "", every string,
// location, function and mapping reference resolving, non-zero unique ids,
// one value per sample type, and no negative in-use value.
//
//	profcheck a.pb.gz [b.pb.gz ...]
//	a.pb.gz ok samples 257 alloc_objects 1 alloc_space 2 inuse_objects 3 inuse_space 4 negative 0 comments 0
//	a.pb.gz invalid: <why>
//
// Exit status: 0 every profile valid without negative in-use values, 1 otherwise.
package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

type buf struct{ b []byte }

func (p *buf) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if len(p.b) == 0 {
			return 0, errors.New("truncated varint")
		}
		c := p.b[0]
		p.b = p.b[1:]
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("varint too long")
}

// field reads one field: its number, wire type, varint value or bytes.
func (p *buf) field() (num int, wire int, v uint64, data []byte, err error) {
	key, err := p.varint()
	if err != nil {
		return
	}
	num, wire = int(key>>3), int(key&7)
	if num == 0 {
		err = errors.New("field number 0")
		return
	}
	switch wire {
	case 0:
		v, err = p.varint()
	case 1:
		if len(p.b) < 8 {
			err = errors.New("truncated fixed64")
			return
		}
		p.b = p.b[8:]
	case 2:
		var n uint64
		if n, err = p.varint(); err != nil {
			return
		}
		if n > uint64(len(p.b)) {
			err = errors.New("truncated length-delimited field")
			return
		}
		data, p.b = p.b[:n], p.b[n:]
	case 5:
		if len(p.b) < 4 {
			err = errors.New("truncated fixed32")
			return
		}
		p.b = p.b[4:]
	default:
		err = fmt.Errorf("bad wire type %d", wire)
	}
	return
}

// ints appends a repeated integer field's values (packed or not).
func ints(dst []int64, wire int, v uint64, data []byte) ([]int64, error) {
	if wire == 0 {
		return append(dst, int64(v)), nil
	}
	if wire != 2 {
		return dst, fmt.Errorf("bad wire type %d for a repeated integer", wire)
	}
	p := buf{data}
	for len(p.b) > 0 {
		x, err := p.varint()
		if err != nil {
			return dst, err
		}
		dst = append(dst, int64(x))
	}
	return dst, nil
}

// msg calls f for every field of an embedded message.
func msg(data []byte, f func(num, wire int, v uint64, data []byte) error) error {
	p := buf{data}
	for len(p.b) > 0 {
		num, wire, v, d, err := p.field()
		if err != nil {
			return err
		}
		if err := f(num, wire, v, d); err != nil {
			return err
		}
	}
	return nil
}

type sample struct {
	locs, values []int64
}

type result struct {
	samples, negative, comments int
	totals                      map[string]int64
}

func check(raw []byte) (*result, error) {
	if len(raw) >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	var (
		sampleTypes [][2]int64 // type, unit string indexes
		samples     []sample
		strs        []string
		strRefs     []int64
		locIDs      = map[int64]bool{}
		funcIDs     = map[int64]bool{}
		mapIDs      = map[int64]bool{}
		locFuncRefs []int64
		locMapRefs  []int64
		comments    int
	)
	valueType := func(data []byte) ([2]int64, error) {
		var vt [2]int64
		err := msg(data, func(num, wire int, v uint64, _ []byte) error {
			if num == 1 || num == 2 {
				vt[num-1] = int64(v)
				strRefs = append(strRefs, int64(v))
			}
			return nil
		})
		return vt, err
	}
	newID := func(seen map[int64]bool, id int64, what string) error {
		if id == 0 || seen[id] {
			return fmt.Errorf("%s id %d is zero or repeated", what, id)
		}
		seen[id] = true
		return nil
	}
	err := msg(raw, func(num, wire int, v uint64, data []byte) error {
		switch num {
		case 1:
			vt, err := valueType(data)
			sampleTypes = append(sampleTypes, vt)
			return err
		case 2:
			var s sample
			err := msg(data, func(num, wire int, v uint64, d []byte) (err error) {
				switch num {
				case 1:
					s.locs, err = ints(s.locs, wire, v, d)
				case 2:
					s.values, err = ints(s.values, wire, v, d)
				case 3:
					err = msg(d, func(num, wire int, v uint64, _ []byte) error {
						if num == 1 || num == 2 || num == 4 {
							strRefs = append(strRefs, int64(v))
						}
						return nil
					})
				}
				return
			})
			samples = append(samples, s)
			return err
		case 3:
			return msg(data, func(num, wire int, v uint64, _ []byte) error {
				switch num {
				case 1:
					return newID(mapIDs, int64(v), "mapping")
				case 5, 6:
					strRefs = append(strRefs, int64(v))
				}
				return nil
			})
		case 4:
			return msg(data, func(num, wire int, v uint64, d []byte) error {
				switch num {
				case 1:
					return newID(locIDs, int64(v), "location")
				case 2:
					locMapRefs = append(locMapRefs, int64(v))
				case 4:
					return msg(d, func(num, wire int, v uint64, _ []byte) error {
						if num == 1 {
							locFuncRefs = append(locFuncRefs, int64(v))
						}
						return nil
					})
				}
				return nil
			})
		case 5:
			return msg(data, func(num, wire int, v uint64, _ []byte) error {
				switch num {
				case 1:
					return newID(funcIDs, int64(v), "function")
				case 2, 3, 4:
					strRefs = append(strRefs, int64(v))
				}
				return nil
			})
		case 6:
			strs = append(strs, string(data))
		case 7, 8, 14:
			strRefs = append(strRefs, int64(v))
		case 11:
			_, err := valueType(data)
			return err
		case 13:
			var c []int64
			c, err := ints(c, wire, v, data)
			strRefs = append(strRefs, c...)
			comments += len(c)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(strs) == 0 || strs[0] != "" {
		return nil, errors.New(`string_table[0] is not ""`)
	}
	for _, i := range strRefs {
		if i < 0 || i >= int64(len(strs)) {
			return nil, fmt.Errorf("string index %d out of range (%d strings)", i, len(strs))
		}
	}
	for _, id := range locFuncRefs {
		if !funcIDs[id] {
			return nil, fmt.Errorf("line refers to missing function %d", id)
		}
	}
	for _, id := range locMapRefs {
		if id != 0 && !mapIDs[id] {
			return nil, fmt.Errorf("location refers to missing mapping %d", id)
		}
	}
	names := make([]string, len(sampleTypes))
	for i, vt := range sampleTypes {
		names[i] = strs[vt[0]]
	}
	if strings.Join(names, ",") != "alloc_objects,alloc_space,inuse_objects,inuse_space" {
		return nil, fmt.Errorf("sample types %v are not a heap profile's", names)
	}
	res := &result{samples: len(samples), comments: comments, totals: map[string]int64{}}
	for n, s := range samples {
		if len(s.values) != len(names) {
			return nil, fmt.Errorf("sample %d has %d values for %d sample types", n, len(s.values), len(names))
		}
		if len(s.locs) == 0 {
			return nil, fmt.Errorf("sample %d has no location", n)
		}
		for _, id := range s.locs {
			if !locIDs[id] {
				return nil, fmt.Errorf("sample %d refers to missing location %d", n, id)
			}
		}
		for i, v := range s.values {
			res.totals[names[i]] += v
		}
		if s.values[2] < 0 || s.values[3] < 0 || s.values[0] < s.values[2] || s.values[1] < s.values[3] {
			res.negative++
		}
	}
	return res, nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: profcheck profile.pb.gz...")
		os.Exit(2)
	}
	status := 0
	for _, path := range os.Args[1:] {
		raw, err := os.ReadFile(path)
		var r *result
		if err == nil {
			r, err = check(raw)
		}
		if err != nil {
			fmt.Printf("%s invalid: %v\n", path, err)
			status = 1
			continue
		}
		fmt.Printf("%s ok samples %d alloc_objects %d alloc_space %d inuse_objects %d inuse_space %d negative %d comments %d\n",
			path, r.samples, r.totals["alloc_objects"], r.totals["alloc_space"],
			r.totals["inuse_objects"], r.totals["inuse_space"], r.negative, r.comments)
		if r.negative > 0 {
			status = 1
		}
	}
	os.Exit(status)
}
