package ops

import (
	"bufio"
	"io"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
)

// metricSet is one broker's registry of counters and histograms, written
// in Prometheus' text exposition format (version 0.0.4). It replaces a
// metrics library whose size came mostly from the HTTP client and server
// it linked in; wren needs only what is here.
//
// A series is a family name and a label string as it appears between the
// braces (`request="Produce"`, already quoted with quote). Updating a
// series touches only an atomic (counters) or the histogram's own mutex;
// finding or making one takes the set's mutex, so callers keep the
// pointer.
type metricSet struct {
	mu       sync.Mutex
	families map[string]*metricFamily
}

type metricFamily struct {
	name, typ, help string
	// series maps a label string to a *counter or a *histogram.
	series map[string]any
}

func newMetricSet() *metricSet { return &metricSet{families: map[string]*metricFamily{}} }

// counter is a monotonically increasing count.
type counter struct {
	v atomic.Uint64
	// scale, when set, is the unit of one count in the exposition: a
	// count of milliseconds exposed as seconds (scaledCounter).
	scale float64
}

func (c *counter) Inc() { c.v.Add(1) }

// Add adds n; a negative n is a programmer error.
func (c *counter) Add(n int64) {
	if n < 0 {
		panic("ops: counter decreased by " + strconv.FormatInt(n, 10))
	}
	c.v.Add(uint64(n))
}

func (c *counter) Get() uint64 { return c.v.Load() }

// histogram counts observations in fixed buckets, as a Prometheus
// histogram: upper bounds ascending, an implicit +Inf bucket last.
type histogram struct {
	upper []float64 // shared, never written after creation
	mu    sync.Mutex
	// counts[i] counts observations in (upper[i-1], upper[i]];
	// counts[len(upper)] those above the last bound.
	counts []uint64
	sum    float64
	count  uint64
}

func (h *histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.upper, v) // the first bound >= v
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.count++
	h.mu.Unlock()
}

// exponentialBuckets returns n upper bounds from start, each factor times
// the one before.
func exponentialBuckets(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}

// counter returns the series' counter, making it on first use.
func (s *metricSet) counter(name, labels, help string) *counter {
	return s.series(name, "counter", help, labels, func() any { return new(counter) }).(*counter)
}

// scaledCounter returns the series' counter, making it on first use,
// whose counts are exposed times scale: Add milliseconds, expose seconds
// with scale 0.001.
func (s *metricSet) scaledCounter(name, labels, help string, scale float64) *counter {
	return s.series(name, "counter", help, labels, func() any { return &counter{scale: scale} }).(*counter)
}

// histogram returns the series' histogram, making it on first use with
// upper as its bucket bounds.
func (s *metricSet) histogram(name, labels, help string, upper []float64) *histogram {
	return s.series(name, "histogram", help, labels, func() any {
		return &histogram{upper: upper, counts: make([]uint64, len(upper)+1)}
	}).(*histogram)
}

func (s *metricSet) series(name, typ, help, labels string, make func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.families[name]
	if f == nil {
		f = &metricFamily{name: name, typ: typ, help: help, series: map[string]any{}}
		s.families[name] = f
	}
	if f.typ != typ {
		panic("ops: metric " + name + " registered as " + f.typ + " and as " + typ)
	}
	m := f.series[labels]
	if m == nil {
		m = make()
		f.series[labels] = m
	}
	return m
}

// write writes every family, sorted by name, and its series, sorted by
// labels, with HELP and TYPE lines.
func (s *metricSet) write(w *bufio.Writer) {
	s.mu.Lock()
	fams := make([]*metricFamily, 0, len(s.families))
	type entry struct {
		labels string
		m      any
	}
	all := map[*metricFamily][]entry{}
	for _, f := range s.families {
		fams = append(fams, f)
		es := make([]entry, 0, len(f.series))
		for l, m := range f.series {
			es = append(es, entry{l, m})
		}
		sort.Slice(es, func(i, j int) bool { return es[i].labels < es[j].labels })
		all[f] = es
	}
	s.mu.Unlock()
	sort.Slice(fams, func(i, j int) bool { return fams[i].name < fams[j].name })
	var buf []byte
	for _, f := range fams {
		writeFamily(w, f.name, f.typ, f.help)
		for _, e := range all[f] {
			switch m := e.m.(type) {
			case *counter:
				v := float64(m.Get())
				if m.scale != 0 {
					v *= m.scale
				}
				buf = appendSample(buf[:0], f.name, e.labels, v)
			case *histogram:
				buf = m.append(buf[:0], f.name, e.labels)
			}
			w.Write(buf)
		}
	}
}

// append appends the histogram's _bucket, _sum and _count samples.
func (h *histogram) append(buf []byte, name, labels string) []byte {
	h.mu.Lock()
	counts := append([]uint64(nil), h.counts...)
	sum, count := h.sum, h.count
	h.mu.Unlock()
	sep := ""
	if labels != "" {
		sep = ","
	}
	var cum uint64
	for i, c := range counts {
		cum += c
		le := "+Inf"
		if i < len(h.upper) {
			le = formatFloat(h.upper[i])
		}
		buf = appendSample(buf, name+"_bucket", labels+sep+`le="`+le+`"`, float64(cum))
	}
	buf = appendSample(buf, name+"_sum", labels, sum)
	return appendSample(buf, name+"_count", labels, float64(count))
}

// appendSample appends one sample line: name{labels} value.
func appendSample(buf []byte, name, labels string, v float64) []byte {
	buf = append(buf, name...)
	if labels != "" {
		buf = append(buf, '{')
		buf = append(buf, labels...)
		buf = append(buf, '}')
	}
	buf = append(buf, ' ')
	buf = append(buf, formatFloat(v)...)
	return append(buf, '\n')
}

// formatFloat writes a sample value or bucket bound as the text format
// wants it: the shortest form that reads back exactly, +Inf, -Inf, NaN.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// writeFamily writes a metric family's HELP and TYPE lines. help must be
// one line without backslashes.
func writeFamily(w io.Writer, name, typ, help string) {
	io.WriteString(w, "# HELP "+name+" "+help+"\n# TYPE "+name+" "+typ+"\n")
}
