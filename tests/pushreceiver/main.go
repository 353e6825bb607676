// Command pushreceiver is the test receiver of `goheap2pprof push`
// (tests/e2e/push_test.sh): Grafana Pyroscope's Push on the published
// github.com/grafana/pyroscope/api module's pushv1connect handler (real
// Connect decoding), and Parca's WriteRaw on its HTTP gateway route. Each
// applies its server's validation rules (fleet.md §1b, §1c, §3) and records
// what it accepted; faults can be switched on to test delivery.
//
//	pushreceiver serve -dir DIR [-tls] [-auth "Bearer T"]   # prints "LISTENING <host:port>"
//	  POST /push.v1.PusherService/Push     Pyroscope
//	  POST /api/profiles/writeraw          Parca (gRPC-gateway JSON)
//	  POST /control?backend=pyroscope&mode=ok|500|400|hang
//	  POST /reply?backend=pyroscope&code=429&count=K&retry-after=N[&form=date]
//	    answers the backend's next K requests with the status code and
//	    Retry-After: N (delta-seconds, or with form=date the HTTP-date at
//	    least N s ahead), each logged to DIR/replies.jsonl with the time it
//	    was answered and the earliest time a retry may come (unix ms);
//	    accepted profiles carry their arrival time (at_ms)
//	pushreceiver proxy -log FILE   # prints "LISTENING <host:port>"
//	  a forward HTTP proxy (absolute-form requests and CONNECT tunnels)
//	  that logs one line per request: "POST http://host:port/path" or
//	  "CONNECT host:port"
//	pushreceiver check -dir DIR -pid PID [-last-inuse OWN] [-sum-alloc OWN] [-after N]
//	  compares the accepted Pyroscope profiles of PID with the target's own
//	  heap profile OWN (a /debug/pprof/heap file): -last-inuse the inuse
//	  values of the last push, -sum-alloc the alloc deltas summed over all
//	  pushes (from push N on with -after; minus the alloc values of the
//	  own profile given with -base); prints PASS/FAIL lines.
//	pushreceiver count -dir DIR -pid PID   # accepted pushes of PID
//	pushreceiver total FILE TYPE           # the sum of a sample type in a profile
//
// Accepted requests are appended to DIR/pyroscope.jsonl and DIR/parca.jsonl,
// one JSON object per profile, with the profile in DIR/<backend>-<n>.pb.gz.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
)

// Pyroscope's defaults (pkg/validation/limits.go).
const (
	maxLabelNames = 30
	maxSamples    = 16000
	maxBytes      = 4 << 20
)

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	uuidRE     = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

type record struct {
	Seq      int               `json:"seq"`
	Labels   map[string]string `json:"labels"`
	ID       string            `json:"id,omitempty"`
	File     string            `json:"file"`
	Samples  int               `json:"samples"`
	Raw      int               `json:"raw_bytes"`
	Body     int               `json:"body_bytes"`
	Comments []string          `json:"comments"`
	Tenant   string            `json:"tenant,omitempty"`
	Auth     string            `json:"auth,omitempty"`
	Dup      bool              `json:"duplicate_id,omitempty"`
	Norm     *bool             `json:"normalized,omitempty"`
	AtMs     int64             `json:"at_ms"`
}

// reply is an armed /reply fault.
type reply struct {
	code, count, retryAfter int
	date                    bool
}

type receiver struct {
	dir  string
	mu   sync.Mutex
	seq  map[string]int
	ids  map[string]bool
	mode map[string]string
	// hangs are released when the mode changes
	changed chan struct{}
	counts  map[string]int // backend/what -> n
	replies map[string]*reply
}

// backendOf names the backend a request path belongs to.
func backendOf(path string) string {
	switch {
	case strings.HasPrefix(path, "/push.v1.PusherService/"):
		return "pyroscope"
	case path == "/api/profiles/writeraw":
		return "parca"
	}
	return ""
}

// replyFault answers the request when a /reply fault is armed for its
// backend; true when it did.
func (r *receiver) replyFault(w http.ResponseWriter, req *http.Request) bool {
	backend := backendOf(req.URL.Path)
	r.mu.Lock()
	f := r.replies[backend]
	if backend == "" || f == nil || f.count <= 0 {
		r.mu.Unlock()
		return false
	}
	f.count--
	r.counts[fmt.Sprintf("%s/%d", backend, f.code)]++
	now := time.Now()
	notBefore := now.Add(time.Duration(f.retryAfter) * time.Second)
	value := strconv.Itoa(f.retryAfter)
	if f.date {
		// One-second resolution: the next whole second at or after N s.
		notBefore = notBefore.Truncate(time.Second).Add(time.Second)
		value = notBefore.UTC().Format(http.TimeFormat)
	}
	line, _ := json.Marshal(map[string]any{"backend": backend, "code": f.code, "retry_after": value,
		"at_ms": now.UnixMilli(), "not_before_ms": notBefore.UnixMilli()})
	if lf, err := os.OpenFile(filepath.Join(r.dir, "replies.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		lf.Write(append(line, '\n'))
		lf.Close()
	}
	r.mu.Unlock()
	io.Copy(io.Discard, io.LimitReader(req.Body, 64<<20))
	w.Header().Set("Retry-After", value)
	http.Error(w, fmt.Sprintf("test receiver: %d on purpose", f.code), f.code)
	return true
}

func (r *receiver) getMode(backend string) (string, chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mode[backend], r.changed
}

func (r *receiver) count(what string) {
	r.mu.Lock()
	r.counts[what]++
	r.mu.Unlock()
}

// fault applies the backend's mode; false when the request was answered.
func (r *receiver) fault(ctx context.Context, backend string) error {
	for {
		mode, changed := r.getMode(backend)
		switch mode {
		case "500":
			r.count(backend + "/500")
			return connect.NewError(connect.CodeInternal, errors.New("test receiver: failing on purpose"))
		case "400":
			r.count(backend + "/400")
			return connect.NewError(connect.CodeInvalidArgument, errors.New("test receiver: rejecting on purpose"))
		case "hang":
			r.count(backend + "/hang")
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
}

func (r *receiver) save(backend string, rec record, raw []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq[backend]++
	rec.Seq = r.seq[backend]
	rec.File = fmt.Sprintf("%s-%d.pb.gz", backend, rec.Seq)
	rec.AtMs = time.Now().UnixMilli()
	if rec.ID != "" {
		rec.Dup = r.ids[rec.ID]
		r.ids[rec.ID] = true
	}
	if err := os.WriteFile(filepath.Join(r.dir, rec.File), raw, 0o644); err != nil {
		return err
	}
	line, _ := json.Marshal(rec)
	f, err := os.OpenFile(filepath.Join(r.dir, backend+".jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

// inflate gunzips gzipped data, else returns it as it is.
func inflate(raw []byte) ([]byte, error) {
	if len(raw) >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		z, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(io.LimitReader(z, 64<<20))
	}
	return raw, nil
}

type pusher struct{ r *receiver }

// Push applies Pyroscope's distributor validation (validate.go) and records.
func (p pusher) Push(ctx context.Context, req *connect.Request[pushv1.PushRequest]) (*connect.Response[pushv1.PushResponse], error) {
	if err := p.r.fault(ctx, "pyroscope"); err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		p.r.count("pyroscope/invalid")
		fmt.Fprintf(os.Stderr, "pyroscope: invalid: "+format+"\n", args...)
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, args...))
	}
	type accepted struct {
		rec record
		raw []byte
	}
	var all []accepted
	for _, s := range req.Msg.Series {
		labels := map[string]string{}
		if len(s.Labels) == 0 {
			return nil, bad("no labels")
		}
		if len(s.Labels) > maxLabelNames {
			return nil, bad("%d labels, over %d", len(s.Labels), maxLabelNames)
		}
		for _, l := range s.Labels {
			if !labelName.MatchString(l.Name) {
				return nil, bad("invalid label name %q", l.Name)
			}
			if _, dup := labels[l.Name]; dup {
				return nil, bad("duplicate label name %q", l.Name)
			}
			labels[l.Name] = l.Value
		}
		if !metricName.MatchString(labels["__name__"]) {
			return nil, bad("invalid metric name %q", labels["__name__"])
		}
		if labels["service_name"] == "" {
			labels["service_name"] = "unknown_service"
		}
		for _, sample := range s.Samples {
			if !uuidRE.MatchString(sample.ID) {
				return nil, bad("ID %q is not a UUID", sample.ID)
			}
			data, err := inflate(sample.RawProfile)
			if err != nil {
				return nil, bad("gunzip: %v", err)
			}
			if len(data) > maxBytes {
				return nil, bad("profile of %d bytes, over %d", len(data), maxBytes)
			}
			prof, err := profile.ParseData(data)
			if err != nil {
				return nil, bad("parse: %v", err)
			}
			if err := prof.CheckValid(); err != nil {
				return nil, bad("invalid profile: %v", err)
			}
			if len(prof.Sample) > maxSamples {
				return nil, bad("%d samples, over %d", len(prof.Sample), maxSamples)
			}
			all = append(all, accepted{record{Labels: labels, ID: sample.ID, Samples: len(prof.Sample),
				Raw: len(sample.RawProfile), Comments: prof.Comments,
				Tenant: req.Header().Get("X-Scope-OrgID"), Auth: req.Header().Get("Authorization")}, sample.RawProfile})
		}
	}
	for _, a := range all {
		if err := p.r.save("pyroscope", a.rec, a.raw); err != nil {
			return nil, connect.NewError(connect.CodeInternal, err)
		}
	}
	p.r.count("pyroscope/ok")
	return connect.NewResponse(&pushv1.PushResponse{}), nil
}

// Parca's WriteRawRequest in protobuf's JSON mapping (grpc-gateway).
type writeRaw struct {
	Tenant     string `json:"tenant"`
	Normalized *bool  `json:"normalized"`
	Series     []struct {
		Labels struct {
			Labels []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"labels"`
		} `json:"labels"`
		Samples []struct {
			RawProfile     []byte            `json:"rawProfile"`
			ExecutableInfo []json.RawMessage `json:"executableInfo"`
		} `json:"samples"`
	} `json:"series"`
}

// rawIDs reads the ids of the profile's mappings (3), locations (4) and
// functions (5) in file order, for Parca's "id is not sequential" check,
// which profile.Parse hides by indexing them.
func rawIDs(data []byte) (map[int][]uint64, error) {
	ids := map[int][]uint64{}
	for len(data) > 0 {
		key, n := binary.Uvarint(data)
		if n <= 0 {
			return nil, errors.New("bad key")
		}
		data = data[n:]
		field, wire := int(key>>3), key&7
		switch wire {
		case 0:
			_, n = binary.Uvarint(data)
			if n <= 0 {
				return nil, errors.New("bad varint")
			}
			data = data[n:]
		case 1:
			data = data[8:]
		case 5:
			data = data[4:]
		case 2:
			l, n := binary.Uvarint(data)
			if n <= 0 || uint64(len(data)-n) < l {
				return nil, errors.New("bad length")
			}
			msg := data[n : n+int(l)]
			data = data[n+int(l):]
			if field == 3 || field == 4 || field == 5 {
				// id is field 1 (varint) of each of these messages.
				var id uint64
				for len(msg) > 0 {
					k, m := binary.Uvarint(msg)
					if m <= 0 {
						return nil, errors.New("bad key")
					}
					msg = msg[m:]
					if k == 1<<3 {
						id, m = binary.Uvarint(msg)
						if m <= 0 {
							return nil, errors.New("bad id")
						}
						break
					}
					switch k & 7 {
					case 0:
						_, m = binary.Uvarint(msg)
						msg = msg[m:]
					case 1:
						msg = msg[8:]
					case 5:
						msg = msg[4:]
					case 2:
						ll, m2 := binary.Uvarint(msg)
						msg = msg[m2+int(ll):]
					default:
						return nil, errors.New("bad wire type")
					}
				}
				ids[field] = append(ids[field], id)
			}
		default:
			return nil, errors.New("bad wire type")
		}
	}
	return ids, nil
}

func (r *receiver) writeRaw(w http.ResponseWriter, req *http.Request) {
	if err := r.fault(req.Context(), "parca"); err != nil {
		code := http.StatusInternalServerError
		if connect.CodeOf(err) == connect.CodeInvalidArgument {
			code = http.StatusBadRequest
		}
		http.Error(w, err.Error(), code)
		return
	}
	bad := func(format string, args ...any) {
		r.count("parca/invalid")
		fmt.Fprintf(os.Stderr, "parca: invalid: "+format+"\n", args...)
		http.Error(w, fmt.Sprintf(format, args...), http.StatusBadRequest)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	if err != nil {
		bad("read: %v", err)
		return
	}
	var wr writeRaw
	if err := json.Unmarshal(body, &wr); err != nil {
		bad("json: %v", err)
		return
	}
	type accepted struct {
		rec record
		raw []byte
	}
	var all []accepted
	for _, s := range wr.Series {
		labels := map[string]string{}
		for _, l := range s.Labels.Labels {
			if !labelName.MatchString(l.Name) {
				bad("invalid label name %q", l.Name)
				return
			}
			if _, dup := labels[l.Name]; dup {
				bad("duplicate label name %q", l.Name)
				return
			}
			labels[l.Name] = l.Value
		}
		if labels["__name__"] == "" {
			bad("missing __name__ label")
			return
		}
		for _, sample := range s.Samples {
			data, err := inflate(sample.RawProfile)
			if err != nil {
				bad("gunzip: %v", err)
				return
			}
			ids, err := rawIDs(data)
			if err != nil {
				bad("profile: %v", err)
				return
			}
			for field, name := range map[int]string{3: "mapping", 4: "location", 5: "function"} {
				for i, id := range ids[field] {
					if id != uint64(i+1) {
						bad("%s id is not sequential: %d at %d", name, id, i)
						return
					}
				}
			}
			prof, err := profile.ParseData(data) // string_table[0] == "" and references
			if err != nil {
				bad("parse: %v", err)
				return
			}
			if err := prof.CheckValid(); err != nil {
				bad("invalid: %v", err)
				return
			}
			if len(prof.Sample) > 0 && len(prof.SampleType) == 0 {
				bad("samples without sample types")
				return
			}
			if len(sample.ExecutableInfo) != 0 && len(sample.ExecutableInfo) != len(prof.Mapping) {
				bad("%d executable_info for %d mappings", len(sample.ExecutableInfo), len(prof.Mapping))
				return
			}
			all = append(all, accepted{record{Labels: labels, Samples: len(prof.Sample), Raw: len(sample.RawProfile),
				Body: len(body), Comments: prof.Comments, Auth: req.Header.Get("Authorization"), Norm: wr.Normalized}, sample.RawProfile})
		}
	}
	for _, a := range all {
		if err := r.save("parca", a.rec, a.raw); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
	}
	r.count("parca/ok")
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}"))
}

func serve(args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", ".", "where accepted profiles go")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	useTLS := fs.Bool("tls", false, "serve https with a new self-signed certificate for 127.0.0.1, written to DIR/ca.pem")
	auth := fs.String("auth", "", "require this Authorization header (else 401)")
	fs.Parse(args)
	r := &receiver{dir: *dir, seq: map[string]int{}, ids: map[string]bool{}, mode: map[string]string{},
		changed: make(chan struct{}), counts: map[string]int{}, replies: map[string]*reply{}}
	mux := http.NewServeMux()
	path, pushHandler := pushv1connect.NewPusherServiceHandler(pusher{r})
	mux.Handle(path, pushHandler)
	mux.HandleFunc("/api/profiles/writeraw", r.writeRaw)
	mux.HandleFunc("/control", func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.mode[req.URL.Query().Get("backend")] = req.URL.Query().Get("mode")
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/reply", func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		code, _ := strconv.Atoi(q.Get("code"))
		count, _ := strconv.Atoi(q.Get("count"))
		after, _ := strconv.Atoi(q.Get("retry-after"))
		r.mu.Lock()
		r.replies[q.Get("backend")] = &reply{code: code, count: count, retryAfter: after, date: q.Get("form") == "date"}
		r.mu.Unlock()
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/counts", func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		json.NewEncoder(w).Encode(r.counts)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !r.replyFault(w, req) {
			mux.ServeHTTP(w, req)
		}
	})
	if *auth != "" {
		inner := handler
		handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Path != "/control" && req.Header.Get("Authorization") != *auth {
				r.count("unauthorized")
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			inner.ServeHTTP(w, req)
		})
	}
	if *useTLS {
		cert, err := selfSigned(filepath.Join(*dir, "ca.pem"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	fmt.Printf("LISTENING %s\n", ln.Addr())
	// HTTP/1.1 and h2c, as Pyroscope's server.
	srv := &http.Server{Handler: handler, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// selfSigned makes a certificate for 127.0.0.1 that is its own CA, and
// writes it as PEM to path for the client's --ca-file.
func selfSigned(path string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "pushreceiver test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// proxy runs a forward HTTP proxy on loopback that logs each request.
func proxy(args []string) {
	fs := flag.NewFlagSet("proxy", flag.ExitOnError)
	logPath := fs.String("log", "proxy.log", "one line per request")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	fs.Parse(args)
	var mu sync.Mutex
	logLine := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
	transport := &http.Transport{Proxy: nil}
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodConnect {
			logLine("CONNECT " + req.Host)
			upstream, err := net.DialTimeout("tcp", req.Host, 5*time.Second)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				upstream.Close()
				return
			}
			conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
			go func() {
				io.Copy(upstream, buf)
				upstream.(*net.TCPConn).CloseWrite()
			}()
			io.Copy(conn, upstream)
			conn.Close()
			upstream.Close()
			return
		}
		if !req.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		logLine(req.Method + " " + req.URL.String())
		out := req.Clone(req.Context())
		out.RequestURI = ""
		out.Header.Del("Proxy-Connection")
		res, err := transport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("LISTENING %s\n", ln.Addr())
	if err := http.Serve(ln, handler); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func readRecords(dir, backend string) []record {
	f, err := os.Open(filepath.Join(dir, backend+".jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var rec record
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

func loadProfile(path string) *profile.Profile {
	f, err := os.Open(path)
	if err != nil {
		fmt.Printf("FAIL: open %s: %v\n", path, err)
		os.Exit(1)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		fmt.Printf("FAIL: parse %s: %v\n", path, err)
		os.Exit(1)
	}
	return p
}

// values sums the named sample types per (stack addresses, bytes label),
// leaving out zeros.
func values(p *profile.Profile, types ...string) map[string][]int64 {
	idx := make([]int, len(types))
	for i, t := range types {
		idx[i] = -1
		for j, st := range p.SampleType {
			if st.Type == t {
				idx[i] = j
			}
		}
		if idx[i] < 0 {
			fmt.Printf("FAIL: profile has no %s\n", t)
			os.Exit(1)
		}
	}
	out := map[string][]int64{}
	for _, s := range p.Sample {
		var key strings.Builder
		for _, l := range s.Location {
			fmt.Fprintf(&key, "%x ", l.Address)
		}
		if b, ok := s.NumLabel["bytes"]; ok && len(b) > 0 {
			fmt.Fprintf(&key, "bytes=%d", b[0])
		}
		v := out[key.String()]
		if v == nil {
			v = make([]int64, len(types))
		}
		for i, j := range idx {
			v[i] += s.Value[j]
		}
		out[key.String()] = v
	}
	for k, v := range out {
		zero := true
		for _, x := range v {
			if x != 0 {
				zero = false
			}
		}
		if zero {
			delete(out, k)
		}
	}
	return out
}

func compare(what string, want, got map[string][]int64) bool {
	var diffs []string
	for k, w := range want {
		g := got[k]
		if fmt.Sprint(w) != fmt.Sprint(g) {
			diffs = append(diffs, fmt.Sprintf("%s: want %v got %v", k, w, g))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: want nothing got %v", k, g))
		}
	}
	sort.Strings(diffs)
	if len(diffs) == 0 {
		fmt.Printf("PASS: %s (%d stacks)\n", what, len(want))
		return true
	}
	fmt.Printf("FAIL: %s: %d of %d stacks differ\n", what, len(diffs), len(want))
	for i, d := range diffs {
		if i == 10 {
			break
		}
		fmt.Printf("    %s\n", d)
	}
	return false
}

// pidRecords: the heap profiles (__name__=memory) pushed for pid.
func pidRecords(dir, pid string) []record {
	var out []record
	for _, rec := range readRecords(dir, "pyroscope") {
		if rec.Labels["pid"] == pid && rec.Labels["__name__"] == "memory" {
			out = append(out, rec)
		}
	}
	return out
}

func check(args []string) {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	dir := fs.String("dir", ".", "receiver directory")
	pid := fs.String("pid", "", "target pid")
	lastInuse := fs.String("last-inuse", "", "own profile to compare the last push's inuse with")
	sumAlloc := fs.String("sum-alloc", "", "own profile to compare the summed alloc deltas with")
	after := fs.Int("after", 0, "sum from this many pushes of pid on (0: all)")
	atMost := fs.Bool("at-most", false, "-sum-alloc: the sum may be smaller than the own values, never larger")
	base := fs.String("base", "", "-sum-alloc: subtract this own profile's alloc values from the own values first")
	firstNoAlloc := fs.Int("first-no-alloc", 0, "push number (1-based) whose alloc values must all be zero")
	fs.Parse(args)
	recs := pidRecords(*dir, *pid)
	ok := true
	if len(recs) == 0 {
		fmt.Printf("FAIL: no accepted push for pid %s\n", *pid)
		os.Exit(1)
	}
	for _, rec := range recs {
		if rec.Dup {
			fmt.Printf("FAIL: push %d carries ID %s, already accepted\n", rec.Seq, rec.ID)
			ok = false
		}
	}
	if *lastInuse != "" {
		last := loadProfile(filepath.Join(*dir, recs[len(recs)-1].File))
		ok = compare("inuse_objects and inuse_space of the last push equal the target's own profile",
			values(loadProfile(*lastInuse), "inuse_objects", "inuse_space"), values(last, "inuse_objects", "inuse_space")) && ok
	}
	if *firstNoAlloc > 0 {
		if *firstNoAlloc > len(recs) {
			fmt.Printf("FAIL: push %d of pid %s does not exist\n", *firstNoAlloc, *pid)
			ok = false
		} else {
			a := values(loadProfile(filepath.Join(*dir, recs[*firstNoAlloc-1].File)), "alloc_objects", "alloc_space")
			if len(a) == 0 {
				fmt.Printf("PASS: push %d of pid %s carries no alloc values (a baseline)\n", *firstNoAlloc, *pid)
			} else {
				fmt.Printf("FAIL: push %d of pid %s carries alloc values for %d stacks\n", *firstNoAlloc, *pid, len(a))
				ok = false
			}
		}
	}
	if *sumAlloc != "" {
		sum := map[string][]int64{}
		n := 0
		for i, rec := range recs {
			if i < *after {
				continue
			}
			n++
			for k, v := range values(loadProfile(filepath.Join(*dir, rec.File)), "alloc_objects", "alloc_space") {
				s := sum[k]
				if s == nil {
					s = make([]int64, 2)
				}
				s[0] += v[0]
				s[1] += v[1]
				sum[k] = s
			}
		}
		own := values(loadProfile(*sumAlloc), "alloc_objects", "alloc_space")
		if *base != "" {
			for k, v := range values(loadProfile(*base), "alloc_objects", "alloc_space") {
				o := own[k]
				if o == nil {
					o = make([]int64, 2)
				}
				o[0] -= v[0]
				o[1] -= v[1]
				if o[0] == 0 && o[1] == 0 {
					delete(own, k)
				} else {
					own[k] = o
				}
			}
		}
		if *atMost {
			bad := 0
			for k, s := range sum {
				o := own[k]
				if o == nil || s[0] > o[0] || s[1] > o[1] {
					bad++
					if bad <= 5 {
						fmt.Printf("    %s: pushed %v, own %v\n", k, s, o)
					}
				}
			}
			if bad == 0 {
				fmt.Printf("PASS: alloc deltas of %d pushes never exceed the target's own profile (%d stacks)\n", n, len(sum))
			} else {
				fmt.Printf("FAIL: alloc deltas of %d pushes exceed the target's own values on %d stacks\n", n, bad)
				ok = false
			}
		} else {
			ok = compare(fmt.Sprintf("alloc deltas summed over %d pushes equal the target's own alloc values", n), own, sum) && ok
		}
	}
	if !ok {
		os.Exit(1)
	}
}

// goroutines: the last goroutine profile (__name__=goroutine) pushed for a
// pid to a backend has the goroutine counts per stack of a direct capture.
func goroutines(args []string) {
	fs := flag.NewFlagSet("goroutines", flag.ExitOnError)
	dir := fs.String("dir", ".", "receiver directory")
	pid := fs.String("pid", "", "target pid")
	backend := fs.String("backend", "pyroscope", "pyroscope or parca")
	own := fs.String("own", "", "a direct goroutine capture of the pid")
	fs.Parse(args)
	var last *record
	for _, rec := range readRecords(*dir, *backend) {
		if rec.Labels["pid"] == *pid && rec.Labels["__name__"] == "goroutine" {
			r := rec
			last = &r
		}
	}
	if last == nil {
		fmt.Printf("FAIL: no goroutine profile pushed to %s for pid %s\n", *backend, *pid)
		os.Exit(1)
	}
	got := loadProfile(filepath.Join(*dir, last.File))
	if !compare(fmt.Sprintf("goroutine counts of %s push %d equal a direct capture's", *backend, last.Seq),
		values(loadProfile(*own), "goroutine"), values(got, "goroutine")) {
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pushreceiver serve|check|count ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2:])
	case "proxy":
		proxy(os.Args[2:])
	case "check":
		check(os.Args[2:])
	case "goroutines":
		goroutines(os.Args[2:])
	case "total":
		// total FILE TYPE: the sum of one sample type over a profile.
		if len(os.Args) != 4 {
			fmt.Fprintln(os.Stderr, "usage: pushreceiver total FILE TYPE")
			os.Exit(2)
		}
		var sum int64
		for _, v := range values(loadProfile(os.Args[2]), os.Args[3]) {
			sum += v[0]
		}
		fmt.Println(sum)
	case "count":
		fs := flag.NewFlagSet("count", flag.ExitOnError)
		dir := fs.String("dir", ".", "receiver directory")
		pid := fs.String("pid", "", "target pid")
		backend := fs.String("backend", "pyroscope", "pyroscope or parca")
		fs.Parse(os.Args[2:])
		n := 0
		for _, rec := range readRecords(*dir, *backend) {
			if *pid == "" || rec.Labels["pid"] == *pid {
				n++
			}
		}
		fmt.Println(strconv.Itoa(n))
	default:
		fmt.Fprintln(os.Stderr, "usage: pushreceiver serve|check|count ...")
		os.Exit(2)
	}
}
