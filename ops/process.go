package ops

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The Go runtime's and the process's figures, under the go_ and process_
// names Prometheus' and VictoriaMetrics' Go clients use, so dashboards
// made for them work. Figures the kernel does not offer (no /proc) are
// left out rather than written as zero.

// runtimeFigures are the runtime/metrics samples written as counters or
// gauges.
var runtimeFigures = []struct{ key, name, typ, help string }{
	{"/sync/mutex/wait/total:seconds", "go_mutex_wait_seconds_total", "counter", "time goroutines spent blocked on a sync.Mutex or sync.RWMutex"},
	{"/cpu/classes/gc/mark/assist:cpu-seconds", "go_gc_mark_assist_cpu_seconds_total", "counter", "CPU time goroutines spent helping the GC mark"},
	{"/cpu/classes/gc/total:cpu-seconds", "go_gc_cpu_seconds_total", "counter", "CPU time spent on garbage collection"},
	{"/cpu/classes/scavenge/total:cpu-seconds", "go_scavenge_cpu_seconds_total", "counter", "CPU time spent returning memory to the OS"},
	{"/gc/gomemlimit:bytes", "go_memlimit_bytes", "gauge", "the Go runtime's soft memory limit (GOMEMLIMIT)"},
	{"/gc/cycles/forced:gc-cycles", "go_gc_forced_count", "counter", "GC cycles forced by the application"},
	{"/cgo/go-to-c-calls:calls", "go_cgo_calls_count", "counter", "calls from Go to C"},
}

// runtimeHistograms are the runtime/metrics histograms written as
// Prometheus histograms, their buckets merged down to at most
// maxRuntimeBuckets. The runtime keeps no exact sum, so they have no
// _sum and _count series rather than made-up ones.
var runtimeHistograms = []struct{ key, name, help string }{
	{"/sched/latencies:seconds", "go_sched_latencies_seconds", "time goroutines spent runnable before running"},
	{"/sched/pauses/total/gc:seconds", "go_gc_pauses_seconds", "stop-the-world pauses of the GC"},
}

const maxRuntimeBuckets = 30

// writeGoMetrics writes the Go runtime's figures.
func writeGoMetrics(w *bufio.Writer) {
	gauge(w, "go_goroutines", "goroutines that currently exist", float64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	gauge(w, "go_threads", "OS threads created", float64(threads))
	gauge(w, "go_gomaxprocs", "GOMAXPROCS", float64(runtime.GOMAXPROCS(0)))
	gauge(w, "go_cpu_count", "logical CPUs usable by the process", float64(runtime.NumCPU()))
	writeFamily(w, "go_info", "gauge", "the Go version the binary was built with")
	w.Write(appendSample(nil, "go_info", "version="+quote(runtime.Version()), 1))

	samples := make([]metrics.Sample, 0, len(runtimeFigures)+len(runtimeHistograms))
	for _, f := range runtimeFigures {
		samples = append(samples, metrics.Sample{Name: f.key})
	}
	for _, h := range runtimeHistograms {
		samples = append(samples, metrics.Sample{Name: h.key})
	}
	metrics.Read(samples)
	for i, f := range runtimeFigures {
		v, ok := sampleValue(samples[i].Value)
		if ok {
			writeFamily(w, f.name, f.typ, f.help)
			w.Write(appendSample(nil, f.name, "", v))
		}
	}
	for i, h := range runtimeHistograms {
		if v := samples[len(runtimeFigures)+i].Value; v.Kind() == metrics.KindFloat64Histogram {
			writeRuntimeHistogram(w, h.name, h.help, v.Float64Histogram())
		}
	}

	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	writeFamily(w, "go_gc_duration_seconds", "summary", "stop-the-world pauses of the GC, as quantiles")
	var buf []byte
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		buf = appendSample(buf, "go_gc_duration_seconds", `quantile="`+q+`"`, gc.PauseQuantiles[i].Seconds())
	}
	buf = appendSample(buf, "go_gc_duration_seconds_sum", "", gc.PauseTotal.Seconds())
	buf = appendSample(buf, "go_gc_duration_seconds_count", "", float64(gc.NumGC))
	w.Write(buf)

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for _, m := range []struct {
		name, typ, help string
		v               float64
	}{
		{"go_memstats_alloc_bytes", "gauge", "bytes of allocated heap objects", float64(ms.Alloc)},
		{"go_memstats_alloc_bytes_total", "counter", "bytes allocated for heap objects, ever", float64(ms.TotalAlloc)},
		{"go_memstats_buck_hash_sys_bytes", "gauge", "bytes of profiling bucket hash tables", float64(ms.BuckHashSys)},
		{"go_memstats_frees_total", "counter", "heap objects freed", float64(ms.Frees)},
		{"go_memstats_gc_cpu_fraction", "gauge", "fraction of CPU time used by the GC since the program started", ms.GCCPUFraction},
		{"go_memstats_gc_sys_bytes", "gauge", "bytes of GC metadata", float64(ms.GCSys)},
		{"go_memstats_heap_alloc_bytes", "gauge", "bytes of allocated heap objects", float64(ms.HeapAlloc)},
		{"go_memstats_heap_idle_bytes", "gauge", "bytes in idle heap spans", float64(ms.HeapIdle)},
		{"go_memstats_heap_inuse_bytes", "gauge", "bytes in in-use heap spans", float64(ms.HeapInuse)},
		{"go_memstats_heap_objects", "gauge", "allocated heap objects", float64(ms.HeapObjects)},
		{"go_memstats_heap_released_bytes", "gauge", "bytes of heap returned to the OS", float64(ms.HeapReleased)},
		{"go_memstats_heap_sys_bytes", "gauge", "bytes of heap memory obtained from the OS", float64(ms.HeapSys)},
		{"go_memstats_last_gc_time_seconds", "gauge", "when the last GC finished, in seconds since the Unix epoch", float64(ms.LastGC) / 1e9},
		{"go_memstats_lookups_total", "counter", "pointer lookups by the runtime", float64(ms.Lookups)},
		{"go_memstats_mallocs_total", "counter", "heap objects allocated", float64(ms.Mallocs)},
		{"go_memstats_mcache_inuse_bytes", "gauge", "bytes of mcache structures in use", float64(ms.MCacheInuse)},
		{"go_memstats_mcache_sys_bytes", "gauge", "bytes of memory obtained for mcache structures", float64(ms.MCacheSys)},
		{"go_memstats_mspan_inuse_bytes", "gauge", "bytes of mspan structures in use", float64(ms.MSpanInuse)},
		{"go_memstats_mspan_sys_bytes", "gauge", "bytes of memory obtained for mspan structures", float64(ms.MSpanSys)},
		{"go_memstats_next_gc_bytes", "gauge", "heap size the next GC aims at", float64(ms.NextGC)},
		{"go_memstats_other_sys_bytes", "gauge", "bytes of other runtime allocations", float64(ms.OtherSys)},
		{"go_memstats_stack_inuse_bytes", "gauge", "bytes in stack spans", float64(ms.StackInuse)},
		{"go_memstats_stack_sys_bytes", "gauge", "bytes of stack memory obtained from the OS", float64(ms.StackSys)},
		{"go_memstats_sys_bytes", "gauge", "bytes of memory obtained from the OS", float64(ms.Sys)},
	} {
		writeFamily(w, m.name, m.typ, m.help)
		w.Write(appendSample(nil, m.name, "", m.v))
	}
}

func sampleValue(v metrics.Value) (float64, bool) {
	switch v.Kind() {
	case metrics.KindUint64:
		return float64(v.Uint64()), true
	case metrics.KindFloat64:
		return v.Float64(), true
	}
	return 0, false
}

// writeRuntimeHistogram writes a runtime histogram as a Prometheus one:
// cumulative counts at the buckets' upper bounds, merged so that at most
// maxRuntimeBuckets bounds are written before +Inf.
func writeRuntimeHistogram(w *bufio.Writer, name, help string, h *metrics.Float64Histogram) {
	if len(h.Buckets) != len(h.Counts)+1 {
		return
	}
	writeFamily(w, name, "histogram", help)
	step := (len(h.Counts) + maxRuntimeBuckets - 1) / maxRuntimeBuckets
	var buf []byte
	var cum uint64
	for i, c := range h.Counts {
		cum += c
		upper := h.Buckets[i+1]
		last := i == len(h.Counts)-1
		if upper > 0 && upper < 1e300 && !last && (i+1)%step == 0 {
			buf = appendSample(buf, name+"_bucket", `le="`+formatFloat(upper)+`"`, float64(cum))
		}
	}
	buf = appendSample(buf, name+"_bucket", `le="+Inf"`, float64(cum))
	w.Write(buf)
}

// userHZ is the unit of the CPU times in /proc/self/stat: USER_HZ, 100 on
// every Linux architecture wren builds for.
const userHZ = 100

// writeProcessMetrics writes the process's figures from /proc/self and
// its file descriptor limit.
func writeProcessMetrics(w *bufio.Writer) {
	if st, ok := readProcStat(); ok {
		counterValue(w, "process_cpu_seconds_user_total", "user CPU time", float64(st.utime)/userHZ)
		counterValue(w, "process_cpu_seconds_system_total", "system CPU time", float64(st.stime)/userHZ)
		counterValue(w, "process_cpu_seconds_total", "user and system CPU time", float64(st.utime+st.stime)/userHZ)
		counterValue(w, "process_major_pagefaults_total", "page faults that read from disk", float64(st.majflt))
		counterValue(w, "process_minor_pagefaults_total", "page faults served without disk", float64(st.minflt))
		gauge(w, "process_num_threads", "OS threads of the process", float64(st.threads))
		if boot, ok := bootTime(); ok {
			gauge(w, "process_start_time_seconds", "when the process started, in seconds since the Unix epoch", float64(boot)+float64(st.startTicks)/userHZ)
		}
	}
	// Memory sizes come from statm, which user-mode emulators (qemu, in
	// the cross-architecture tests) pass through from the kernel while
	// they fill stat with zeros.
	if m := strings.Fields(readFile("/proc/self/statm")); len(m) >= 2 {
		size, err1 := strconv.ParseUint(m[0], 10, 64)
		resident, err2 := strconv.ParseUint(m[1], 10, 64)
		if err1 == nil && err2 == nil {
			page := float64(os.Getpagesize())
			gauge(w, "process_resident_memory_bytes", "resident set size", float64(resident)*page)
			gauge(w, "process_virtual_memory_bytes", "virtual memory size", float64(size)*page)
		}
	}
	status := readKeyValues("/proc/self/status")
	for _, f := range []struct{ key, name, help string }{
		{"VmPeak", "process_virtual_memory_peak_bytes", "largest virtual memory size"},
		{"VmHWM", "process_resident_memory_peak_bytes", "largest resident set size"},
		{"RssAnon", "process_resident_memory_anon_bytes", "resident anonymous memory"},
		{"RssFile", "process_resident_memory_file_bytes", "resident file mappings"},
		{"RssShmem", "process_resident_memory_shared_bytes", "resident shared memory"},
	} {
		if kb, ok := status[f.key]; ok {
			gauge(w, f.name, f.help, float64(kb)*1024)
		}
	}
	io := readKeyValues("/proc/self/io")
	for _, f := range []struct{ key, name, help string }{
		{"rchar", "process_io_read_bytes_total", "bytes read by read-like system calls"},
		{"wchar", "process_io_written_bytes_total", "bytes written by write-like system calls"},
		{"syscr", "process_io_read_syscalls_total", "read-like system calls"},
		{"syscw", "process_io_write_syscalls_total", "write-like system calls"},
		{"read_bytes", "process_io_storage_read_bytes_total", "bytes read from storage"},
		{"write_bytes", "process_io_storage_written_bytes_total", "bytes sent to storage"},
	} {
		if v, ok := io[f.key]; ok {
			counterValue(w, f.name, f.help, float64(v))
		}
	}
	if d, err := os.Open("/proc/self/fd"); err == nil {
		names, err := d.Readdirnames(-1)
		d.Close()
		if err == nil {
			gauge(w, "process_open_fds", "open file descriptors", float64(len(names)))
		}
	}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		gauge(w, "process_max_fds", "the limit on open file descriptors", float64(lim.Cur))
	}
}

type procStat struct {
	utime, stime, minflt, majflt, threads, startTicks uint64
}

// readProcStat reads /proc/self/stat. The command name in parentheses
// may hold spaces and parentheses, so the fields are counted from the
// last ") ".
func readProcStat() (procStat, bool) {
	var st procStat
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return st, false
	}
	i := bytes.LastIndex(data, []byte(") "))
	if i < 0 {
		return st, false
	}
	// Fields from the state, the third field of proc(5), on.
	f := strings.Fields(string(data[i+2:]))
	if len(f) < 22 {
		return st, false
	}
	field := func(n int) uint64 { // n as numbered in proc(5)
		v, _ := strconv.ParseUint(f[n-3], 10, 64)
		return v
	}
	st.minflt, st.majflt = field(10), field(12)
	st.utime, st.stime = field(14), field(15)
	st.threads, st.startTicks = field(20), field(22)
	return st, true
}

// bootTime is the btime line of /proc/stat: when the system booted, in
// seconds since the Unix epoch.
func bootTime() (uint64, bool) {
	v, ok := readKeyValues("/proc/stat")["btime"]
	return v, ok
}

// readKeyValues reads "key: number [unit]" or "key number ..." lines,
// keeping the first number of each.
func readKeyValues(path string) map[string]uint64 {
	out := map[string]uint64{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[strings.TrimSuffix(f[0], ":")] = v
		}
	}
	return out
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func gauge(w *bufio.Writer, name, help string, v float64) {
	writeFamily(w, name, "gauge", help)
	w.Write(appendSample(nil, name, "", v))
}

func counterValue(w *bufio.Writer, name, help string, v float64) {
	writeFamily(w, name, "counter", help)
	w.Write(appendSample(nil, name, "", v))
}
