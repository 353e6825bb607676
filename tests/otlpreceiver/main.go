// otlpreceiver: the OpenTelemetry side of tests/e2e/push_otlp_test.sh, built
// from the Collector's own modules at the release the test pins.
//
//	otlpreceiver collector --config=file:cfg.yaml --feature-gates=+service.profilesSupport
//	    a real OpenTelemetry Collector: otlpreceiver, otlphttpexporter and
//	    debugexporter, as any distribution builds it (otelcol.NewCommand).
//	otlpreceiver serve -dir DIR
//	    an OTLP/HTTP profiles endpoint (POST /v1development/profiles) that
//	    checks the version header as the Collector does, decodes each request
//	    with the Collector's pdata/pprofile, and writes, per ResourceProfiles,
//	    its resource attributes (DIR/resources.jsonl) and its profiles
//	    translated back to one pprof profile (DIR/<pid>.<n>.pb.gz). Prints
//	    "LISTENING host:port".
//	otlpreceiver normalize IN OUT
//	    a pprof profile as push sends it: samples with the same stack and
//	    labels merged (push keys its alloc deltas so, as godeltaprof does),
//	    samples whose values are all zero dropped.
//	otlpreceiver total TYPE FILE...
//	    the sum of one sample type over the profiles (alloc deltas add up).
//
// The translation back to pprof follows the semantic conventions'
// pprof.* attributes: profiles zip into one sample list (sample j of every
// profile is pprof sample j), in pprof.scope.sample_type_order; mapping
// build ids come from process.executable.build_id.gnu; a `bytes` label's
// unit "bytes" is the one pprof implies, so it is left implicit.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: otlpreceiver collector ARGS... | serve -dir DIR")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "collector":
		os.Args = append(os.Args[:1], os.Args[2:]...)
		runCollector()
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ExitOnError)
		dir := fs.String("dir", ".", "where to write what was received")
		fs.Parse(os.Args[2:])
		serve(*dir)
	case "normalize":
		if err := normalize(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "total":
		t, err := total(os.Args[2], os.Args[3:])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(t)
	default:
		fmt.Fprintln(os.Stderr, "unknown command", os.Args[1])
		os.Exit(2)
	}
}

func runCollector() {
	factories := func() (otelcol.Factories, error) {
		var f otelcol.Factories
		var err error
		if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
			return f, err
		}
		if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
			otlphttpexporter.NewFactory(), debugexporter.NewFactory()); err != nil {
			return f, err
		}
		f.Telemetry = otelconftelemetry.NewFactory()
		return f, nil
	}
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otlpreceiver", Description: "test Collector", Version: "test"},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type receiverState struct {
	mu  sync.Mutex
	dir string
	n   map[int64]int
}

func serve(dir string) {
	st := &receiverState{dir: dir, n: map[int64]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("LISTENING %s\n", ln.Addr())
	http.HandleFunc("/v1development/profiles", st.handle)
	fmt.Fprintln(os.Stderr, http.Serve(ln, nil))
}

func (st *receiverState) handle(w http.ResponseWriter, r *http.Request) {
	if err := pprofileotlp.ValidateDevelopmentVersion(r.Header.Values(pprofileotlp.DevelopmentVersionHeader)); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		http.Error(w, "decoding: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := st.record(req.Profiles()); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp := pprofileotlp.NewExportResponse()
	out, _ := resp.MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (st *receiverState) record(pd pprofile.Profiles) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	dict := pd.Dictionary()
	for i := 0; i < pd.ResourceProfiles().Len(); i++ {
		rp := pd.ResourceProfiles().At(i)
		attrs := rp.Resource().Attributes().AsRaw()
		pid, _ := rp.Resource().Attributes().Get("process.pid")
		line, _ := json.Marshal(map[string]any{"pid": pid.Int(), "attributes": attrs,
			"scopes": scopesOf(rp)})
		f, err := os.OpenFile(filepath.Join(st.dir, "resources.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		fmt.Fprintf(f, "%s\n", line)
		f.Close()
		for j := 0; j < rp.ScopeProfiles().Len(); j++ {
			p, err := toPprof(dict, rp.ScopeProfiles().At(j))
			if err != nil {
				return err
			}
			st.n[pid.Int()]++
			out, err := os.Create(filepath.Join(st.dir, fmt.Sprintf("%d.%d.pb.gz", pid.Int(), st.n[pid.Int()])))
			if err != nil {
				return err
			}
			if err := p.Write(out); err != nil {
				return err
			}
			out.Close()
		}
	}
	return nil
}

func scopesOf(rp pprofile.ResourceProfiles) []map[string]any {
	var out []map[string]any
	for j := 0; j < rp.ScopeProfiles().Len(); j++ {
		s := rp.ScopeProfiles().At(j)
		out = append(out, map[string]any{"name": s.Scope().Name(), "version": s.Scope().Version(),
			"attributes": s.Scope().Attributes().AsRaw(), "profiles": s.Profiles().Len()})
	}
	return out
}

// attrs returns the dictionary attributes at `indices` by key.
func attrs(dict pprofile.ProfilesDictionary, indices pcommon.Int32Slice) map[string]pprofile.KeyValueAndUnit {
	out := map[string]pprofile.KeyValueAndUnit{}
	for _, i := range indices.AsRaw() {
		kv := dict.AttributeTable().At(int(i))
		out[dict.StringTable().At(int(kv.KeyStrindex()))] = kv
	}
	return out
}

func toPprof(dict pprofile.ProfilesDictionary, sp pprofile.ScopeProfiles) (*profile.Profile, error) {
	str := func(i int32) string { return dict.StringTable().At(int(i)) }
	p := &profile.Profile{}
	if v, ok := sp.Scope().Attributes().Get("pprof.scope.default_sample_type"); ok {
		p.DefaultSampleType = v.Str()
	}
	mappings := make([]*profile.Mapping, dict.MappingTable().Len())
	for i := 1; i < len(mappings); i++ {
		m := dict.MappingTable().At(i)
		a := attrs(dict, m.AttributeIndices())
		pm := &profile.Mapping{ID: uint64(i), Start: m.MemoryStart(), Limit: m.MemoryLimit(),
			Offset: m.FileOffset(), File: str(m.FilenameStrindex())}
		if b, ok := a["process.executable.build_id.gnu"]; ok {
			pm.BuildID = b.Value().Str()
		}
		_, pm.HasFunctions = a["pprof.mapping.has_functions"]
		_, pm.HasFilenames = a["pprof.mapping.has_filenames"]
		_, pm.HasLineNumbers = a["pprof.mapping.has_line_numbers"]
		_, pm.HasInlineFrames = a["pprof.mapping.has_inline_frames"]
		mappings[i] = pm
		p.Mapping = append(p.Mapping, pm)
	}
	functions := make([]*profile.Function, dict.FunctionTable().Len())
	for i := 1; i < len(functions); i++ {
		f := dict.FunctionTable().At(i)
		functions[i] = &profile.Function{ID: uint64(i), Name: str(f.NameStrindex()),
			SystemName: str(f.SystemNameStrindex()), Filename: str(f.FilenameStrindex()), StartLine: f.StartLine()}
		p.Function = append(p.Function, functions[i])
	}
	locations := make([]*profile.Location, dict.LocationTable().Len())
	for i := 1; i < len(locations); i++ {
		l := dict.LocationTable().At(i)
		pl := &profile.Location{ID: uint64(i), Mapping: mappings[l.MappingIndex()], Address: l.Address()}
		for k := 0; k < l.Lines().Len(); k++ {
			ln := l.Lines().At(k)
			pl.Line = append(pl.Line, profile.Line{Function: functions[ln.FunctionIndex()], Line: ln.Line(), Column: ln.Column()})
		}
		_, pl.IsFolded = attrs(dict, l.AttributeIndices())["pprof.location.is_folded"]
		locations[i] = pl
		p.Location = append(p.Location, pl)
	}
	profiles := sp.Profiles()
	for k := 0; k < profiles.Len(); k++ {
		pr := profiles.At(k)
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: str(pr.SampleType().TypeStrindex()), Unit: str(pr.SampleType().UnitStrindex())})
		if k > 0 {
			if pr.Samples().Len() != len(p.Sample) {
				return nil, fmt.Errorf("profile %d has %d samples, profile 0 has %d", k, pr.Samples().Len(), len(p.Sample))
			}
			for j := 0; j < pr.Samples().Len(); j++ {
				p.Sample[j].Value = append(p.Sample[j].Value, pr.Samples().At(j).Values().At(0))
			}
			continue
		}
		p.PeriodType = &profile.ValueType{Type: str(pr.PeriodType().TypeStrindex()), Unit: str(pr.PeriodType().UnitStrindex())}
		p.Period = pr.Period()
		p.TimeNanos = int64(pr.Time().AsTime().UnixNano())
		p.DurationNanos = int64(pr.DurationNano())
		pa := attrs(dict, pr.AttributeIndices())
		if c, ok := pa["pprof.profile.comment"]; ok {
			for _, v := range c.Value().Slice().AsRaw() {
				p.Comments = append(p.Comments, v.(string))
			}
		}
		for j := 0; j < pr.Samples().Len(); j++ {
			p.Sample = append(p.Sample, sampleOf(dict, pr.Samples().At(j), locations))
		}
	}
	return p, p.CheckValid()
}

func sampleOf(dict pprofile.ProfilesDictionary, s pprofile.Sample, locations []*profile.Location) *profile.Sample {
	ps := &profile.Sample{Value: []int64{s.Values().At(0)}}
	for _, li := range dict.StackTable().At(int(s.StackIndex())).LocationIndices().AsRaw() {
		ps.Location = append(ps.Location, locations[li])
	}
	for key, kv := range attrs(dict, s.AttributeIndices()) {
		if kv.Value().Type() == pcommon.ValueTypeStr {
			if ps.Label == nil {
				ps.Label = map[string][]string{}
			}
			ps.Label[key] = append(ps.Label[key], kv.Value().Str())
			continue
		}
		if ps.NumLabel == nil {
			ps.NumLabel = map[string][]int64{}
			ps.NumUnit = map[string][]string{}
		}
		unit := dict.StringTable().At(int(kv.UnitStrindex()))
		if key == "bytes" && unit == "bytes" {
			unit = "" // the unit pprof implies for it
		}
		ps.NumLabel[key] = append(ps.NumLabel[key], kv.Value().Int())
		ps.NumUnit[key] = append(ps.NumUnit[key], unit)
	}
	return ps
}

func parseFile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return profile.Parse(f)
}

func total(sampleType string, files []string) (int64, error) {
	var sum int64
	for _, path := range files {
		p, err := parseFile(path)
		if err != nil {
			return 0, err
		}
		i := -1
		for k, st := range p.SampleType {
			if st.Type == sampleType {
				i = k
			}
		}
		if i < 0 {
			return 0, fmt.Errorf("%s: no sample type %s", path, sampleType)
		}
		for _, s := range p.Sample {
			sum += s.Value[i]
		}
	}
	return sum, nil
}

func normalize(in, out string) error {
	p, err := parseFile(in)
	if err != nil {
		return err
	}
	merged := map[string]*profile.Sample{}
	var kept []*profile.Sample
	for _, s := range p.Sample {
		key := fmt.Sprint(s.Label, s.NumLabel, s.NumUnit)
		for _, l := range s.Location {
			key += fmt.Sprintf(" %x", l.Address)
		}
		if m, ok := merged[key]; ok {
			for i := range m.Value {
				m.Value[i] += s.Value[i]
			}
			continue
		}
		merged[key] = s
		kept = append(kept, s)
	}
	p.Sample = nil
	for _, s := range kept {
		for _, v := range s.Value {
			if v != 0 {
				p.Sample = append(p.Sample, s)
				break
			}
		}
	}
	o, err := os.Create(out)
	if err != nil {
		return err
	}
	defer o.Close()
	return p.Write(o)
}
