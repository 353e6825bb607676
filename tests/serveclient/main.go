// Command serveclient is a test client for `goheap2pprof serve` that scrapes
// like the real continuous profilers do and applies their acceptance rules
// (see /work/shared/reference/fleet.md §2a and §3):
//
//	serveclient scrape [-token T] URL
//
// Grafana Alloy's pyroscope.scrape: a 2xx status, a non-empty body, a
// Content-Type starting with application/octet-stream, a body that is not
// text or HTML, and gzip magic; then it scrapes again and computes its
// client-side delta of alloc_* keyed by (stack addresses, labels), which
// needs every key of the first scrape in the second with values that did
// not decrease.
// Parca's scraper and WriteRaw validation: status 200, a non-empty body,
// string_table[0] empty, mapping, function and location ids 1..N in order,
// every reference in range, sample types present when there are samples.
// It prints one PASS/FAIL line per rule and exits 1 if any failed.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

var failed bool

func check(ok bool, rule, detail string) {
	if ok {
		fmt.Printf("PASS: %s\n", rule)
	} else {
		failed = true
		fmt.Printf("FAIL: %s: %s\n", rule, detail)
	}
}

func fetch(url, token string) (*http.Response, []byte, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("User-Agent", "conprof/serveclient")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// The raw ids as sent, before any renumbering: Parca's validation reads them
// from the wire, and profile.Parse keeps them.
func checkParca(p *profile.Profile, raw []byte) {
	for i, m := range p.Mapping {
		if m.ID != uint64(i+1) {
			check(false, "parca: mapping ids 1..N in order", fmt.Sprintf("mapping %d has id %d", i, m.ID))
			return
		}
	}
	check(true, "parca: mapping ids 1..N in order", "")
	okF := true
	for i, f := range p.Function {
		if f.ID != uint64(i+1) {
			okF = false
		}
	}
	check(okF, "parca: function ids 1..N in order", "")
	okL := true
	for i, l := range p.Location {
		if l.ID != uint64(i+1) {
			okL = false
		}
	}
	check(okL, "parca: location ids 1..N in order", "")
	check(len(p.Sample) == 0 || len(p.SampleType) > 0, "parca: sample types present", "")
	// profile.Parse refuses a string table whose first entry is not empty,
	// and references out of range; reaching here means both hold.
	check(p.CheckValid() == nil, "parca: references valid (CheckValid)", fmt.Sprint(p.CheckValid()))
	_ = raw
}

type key string

func sampleKey(s *profile.Sample) key {
	var b strings.Builder
	for _, l := range s.Location {
		fmt.Fprintf(&b, "%x;", l.Address)
	}
	var labels []string
	for k, v := range s.Label {
		labels = append(labels, fmt.Sprintf("%s=%v", k, v))
	}
	for k, v := range s.NumLabel {
		labels = append(labels, fmt.Sprintf("%s=%v%v", k, v, s.NumUnit[k]))
	}
	sort.Strings(labels)
	b.WriteString(strings.Join(labels, ","))
	return key(b.String())
}

func allocIndexes(p *profile.Profile) []int {
	var idx []int
	for i, st := range p.SampleType {
		if st.Type == "alloc_objects" || st.Type == "alloc_space" {
			idx = append(idx, i)
		}
	}
	return idx
}

func scrapeOnce(url, token string) *profile.Profile {
	resp, body, err := fetch(url, token)
	if err != nil {
		check(false, "scrape", err.Error())
		return nil
	}
	check(resp.StatusCode == 200, "parca+alloy: status 200", resp.Status+": "+string(body))
	if resp.StatusCode != 200 {
		return nil
	}
	check(len(body) > 0, "parca+alloy: non-empty body", "")
	ct := resp.Header.Get("Content-Type")
	check(strings.HasPrefix(ct, "application/octet-stream"), "alloy: Content-Type application/octet-stream", ct)
	head := strings.ToLower(string(body[:min(len(body), 64)]))
	check(!strings.HasPrefix(head, "<") && !strings.Contains(head, "html"), "alloy: body is not text/HTML", "")
	check(len(body) > 2 && body[0] == 0x1f && body[1] == 0x8b, "alloy: gzip magic", "")
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		check(false, "gunzip", err.Error())
		return nil
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		check(false, "gunzip", err.Error())
		return nil
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		check(false, "parca: parses (string_table[0] empty, references in range)", err.Error())
		return nil
	}
	check(true, "parca: parses (string_table[0] empty, references in range)", "")
	checkParca(p, raw)
	return p
}

func main() {
	token := flag.String("token", "", "bearer token")
	flag.Parse()
	if flag.NArg() != 2 || flag.Arg(0) != "scrape" {
		fmt.Fprintln(os.Stderr, "usage: serveclient scrape [-token T] URL")
		os.Exit(2)
	}
	url := flag.Arg(1)
	p1 := scrapeOnce(url, *token)
	p2 := scrapeOnce(url, *token)
	if p1 == nil || p2 == nil {
		os.Exit(1)
	}
	// Alloy's fastdelta: alloc_* of scrape 2 minus scrape 1, per key.
	idx := allocIndexes(p1)
	check(len(idx) == 2, "alloy: alloc_objects and alloc_space present", fmt.Sprint(p1.SampleType))
	prev := map[key][]int64{}
	for _, s := range p1.Sample {
		k := sampleKey(s)
		v := prev[k]
		if v == nil {
			v = make([]int64, len(s.Value))
		}
		for i := range s.Value {
			v[i] += s.Value[i]
		}
		prev[k] = v
	}
	missing, negative := 0, 0
	cur := map[key][]int64{}
	for _, s := range p2.Sample {
		k := sampleKey(s)
		v := cur[k]
		if v == nil {
			v = make([]int64, len(s.Value))
		}
		for i := range s.Value {
			v[i] += s.Value[i]
		}
		cur[k] = v
	}
	for k, v := range prev {
		c, ok := cur[k]
		if !ok {
			missing++
			continue
		}
		for _, i := range idx {
			if c[i] < v[i] {
				negative++
			}
		}
	}
	check(missing == 0, "alloy: every (stack addresses, labels) key of scrape 1 is in scrape 2", fmt.Sprintf("%d keys missing", missing))
	check(negative == 0, "alloy: alloc_* deltas are not negative", fmt.Sprintf("%d decreased", negative))
	if failed {
		os.Exit(1)
	}
}
