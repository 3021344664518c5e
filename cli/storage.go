package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// exitDamaged is storage check's exit status when it finds damage, apart
// from 1 (the check itself failed) and 2 (a bad command line), so scripts
// and monitors can tell them apart.
const exitDamaged = 3

func storageCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "storage",
		Usage: "check and repair the partition data on disk (offline tools: they read the files, not a broker)",
		Subcommands: []*ucli.Command{
			storageCheckCommand(env),
			storageRepairCommand(env),
		},
	}
}

// dataDirFlags name the data directory: --dir, else the config's log.dirs,
// else the built-in default, as `wren serve` finds it.
func dataDirFlags(extra ...ucli.Flag) []ucli.Flag {
	return append([]ucli.Flag{
		&ucli.StringFlag{Name: "dir", Aliases: []string{"d"}, Usage: "data directory (default: log.dirs of the config)"},
		&ucli.StringFlag{Name: "config", Aliases: []string{"c"}, EnvVars: []string{"WREN_CONFIG"},
			Usage: "config file whose log.dirs to use (default: the built-in defaults, as wren serve)"},
		nodeIDFlag(),
		&ucli.StringFlag{Name: "format", Value: "text", Usage: "output format: text or json"},
	}, extra...)
}

// dataDirs is --dir, else the log.dirs of the node the config and
// --node-id (WREN_NODE_ID) select, as serve selects it: in a file shared
// by the cluster, the node's [node.N.broker] log.dirs.
func dataDirs(c *ucli.Context, env Env) ([]string, error) {
	if d := c.String("dir"); d != "" {
		return []string{strings.TrimRight(d, "/")}, nil
	}
	cfg, err := nodeConfig(c, env, c.String("config"))
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(cfg.LogDirs))
	for i, d := range cfg.LogDirs {
		dirs[i] = strings.TrimRight(d, "/")
	}
	return dirs, nil
}

func storageCheckCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "check",
		Usage: "read every record batch of every partition and check its CRC; exit 3 when damage is found",
		Description: "Reads every segment of every partition in the data directory with CRC-32C checks, by the\n" +
			"rules recovery uses, and never writes: it is safe while the broker runs. Prints each damaged\n" +
			"byte range (PARTITION FILE POSITION END OFFSETS RECORDS-AFTER LISTED REASON), where OFFSETS are\n" +
			"those the range held (\"?\" when unknown), RECORDS-AFTER the valid records behind it (what a\n" +
			"truncation there would drop on top of it), and LISTED whether the broker knows (it keeps\n" +
			"the partition offline). Index problems and an incomplete write at the end of a log are\n" +
			"reported as notes: recovery deals with both.\n" +
			"Exit status: 0 when nothing is damaged, 3 when something is, 1 when the check failed, 2 for a bad command line.",
		Flags: dataDirFlags(
			&ucli.StringFlag{Name: "partition", Aliases: []string{"p"}, Usage: "check only TOPIC-PARTITION"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments")
			if err != nil {
				return err
			}
			dirs, err := dataDirs(c, env)
			if err != nil {
				return err
			}
			var only *engine.TopicPartition
			if p := c.String("partition"); p != "" {
				tp, err := engine.ParseTopicPartitionDir(p)
				if err != nil {
					return fmt.Errorf("%w: --partition %q: want TOPIC-PARTITION, as t-0", ErrUsage, p)
				}
				only = &tp
			}
			return checkStorage(env, vfs.NewOS(), dirs, only, format)
		},
	}
}

// checkResult is storage check's JSON document.
type checkResult struct {
	Dirs       []string          `json:"dirs"`
	Checked    int               `json:"checked"`
	Damaged    int               `json:"damaged"`
	Partitions []partitionResult `json:"partitions"`
}

type partitionResult struct {
	Dir           string            `json:"dir"`
	Topic         string            `json:"topic"`
	Partition     int32             `json:"partition"`
	Segments      int               `json:"segments"`
	Batches       int64             `json:"batches"`
	Records       int64             `json:"records"`
	FirstOffset   int64             `json:"first_offset"`
	LastOffset    int64             `json:"last_offset"`
	TornTailBytes int64             `json:"torn_tail_bytes"`
	Damage        []damageResult    `json:"damage"`
	IndexProblems []indexProblemOut `json:"index_problems"`
	StaleListing  bool              `json:"stale_listing"`
	PendingSwaps  []string          `json:"pending_swaps"`
}

type damageResult struct {
	File        string `json:"file"`
	Position    int64  `json:"position"`
	End         int64  `json:"end"`
	FirstOffset int64  `json:"first_offset"`
	// LastOffset is -1 when unknown.
	LastOffset   int64  `json:"last_offset"`
	Reason       string `json:"reason"`
	RecordsAfter int64  `json:"records_after"`
	Listed       bool   `json:"listed"`
}

type indexProblemOut struct {
	File   string `json:"file"`
	Entry  int64  `json:"entry"`
	Reason string `json:"reason"`
}

func damageResults(ds []engine.DamageReport) []damageResult {
	out := make([]damageResult, len(ds))
	for i, d := range ds {
		out[i] = damageResult{File: d.File, Position: d.Position, End: d.End, FirstOffset: d.FirstOffset, LastOffset: d.LastOffset,
			Reason: d.Reason, RecordsAfter: d.RecordsAfter, Listed: d.Listed}
	}
	return out
}

func partitionResultOf(dataDir string, r *engine.PartitionReport) partitionResult {
	p := partitionResult{Dir: dataDir, Topic: r.TopicPartition.Topic, Partition: r.TopicPartition.Partition,
		Segments: r.Segments, Batches: r.Batches, Records: r.Records, FirstOffset: r.FirstOffset, LastOffset: r.LastOffset,
		TornTailBytes: r.TornTailBytes, Damage: damageResults(r.Damage), IndexProblems: []indexProblemOut{},
		StaleListing: r.StaleListing, PendingSwaps: append([]string{}, r.PendingSwaps...)}
	for _, ip := range r.IndexProblems {
		p.IndexProblems = append(p.IndexProblems, indexProblemOut{File: ip.File, Entry: ip.Entry, Reason: ip.Reason})
	}
	return p
}

func checkStorage(env Env, fsys vfs.FS, dirs []string, only *engine.TopicPartition, format outputFormat) error {
	type job struct {
		dir string
		tp  engine.TopicPartition
	}
	var jobs []job
	for _, d := range dirs {
		tps, err := engine.PartitionDirs(fsys, d)
		if err != nil {
			return err
		}
		for _, tp := range tps {
			if only == nil || *only == tp {
				jobs = append(jobs, job{d, tp})
			}
		}
	}
	if only != nil && len(jobs) == 0 {
		return fmt.Errorf("no partition %s in %s", only, strings.Join(dirs, ", "))
	}
	res := checkResult{Dirs: dirs, Partitions: []partitionResult{}}
	var reports []engine.PartitionReport
	var bar *progress
	if len(jobs) > 1 {
		bar = newProgressOf(env.Stderr, int64(len(jobs)), "checking partitions", "")
	}
	for _, j := range jobs {
		r, err := engine.CheckPartition(fsys, j.dir+"/"+j.tp.String(), j.tp)
		bar.add(1)
		if err != nil {
			bar.clear()
			return err
		}
		reports = append(reports, r)
		res.Partitions = append(res.Partitions, partitionResultOf(j.dir, &r))
		res.Checked++
		if r.Damaged() {
			res.Damaged++
		}
	}
	bar.finish()
	err := printResult(env.Stdout, format, res, func(w io.Writer) { printCheckText(w, dirs, reports, res) })
	if err != nil {
		return err
	}
	if res.Damaged > 0 {
		return &exitError{code: exitDamaged}
	}
	return nil
}

func offsetsText(first, last int64) string {
	switch {
	case last < 0:
		return strconv.FormatInt(first, 10) + "-?"
	case last < first:
		return "none" // bytes between two batches whose offsets follow on
	}
	return fmt.Sprintf("%d-%d", first, last)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func printCheckText(w io.Writer, dirs []string, reports []engine.PartitionReport, res checkResult) {
	ranges, problems := 0, 0
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range reports {
		for _, d := range r.Damage {
			if ranges == 0 {
				fmt.Fprintln(tw, "PARTITION\tFILE\tPOSITION\tEND\tOFFSETS\tRECORDS-AFTER\tLISTED\tREASON")
			}
			ranges++
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%s\t%s\n", r.TopicPartition, d.File, d.Position, d.End,
				offsetsText(d.FirstOffset, d.LastOffset), d.RecordsAfter, yesNo(d.Listed), d.Reason)
		}
	}
	tw.Flush()
	for _, r := range reports {
		for _, ip := range r.IndexProblems {
			problems++
			entry := ""
			if ip.Entry >= 0 {
				entry = fmt.Sprintf(" entry %d", ip.Entry)
			}
			fmt.Fprintf(w, "note: %s: index %s%s: %s (recovery rebuilds indexes from the log; no data is at stake)\n", r.TopicPartition, ip.File, entry, ip.Reason)
		}
		if r.TornTailBytes > 0 {
			fmt.Fprintf(w, "note: %s: %d bytes of an incomplete write at the end of %s (recovery cuts them: they were never synced, or a running broker is writing them)\n",
				r.TopicPartition, r.TornTailBytes, r.TornTailFile)
		}
		if r.StaleListing {
			fmt.Fprintf(w, "note: %s: listed as damaged in %s/%s but whole now (the next broker start removes the listing)\n", r.TopicPartition, r.Dir, engine.DamagedSegmentsFile)
		}
		for _, s := range r.PendingSwaps {
			fmt.Fprintf(w, "note: %s: %s is an interrupted segment swap (the next broker start completes it)\n", r.TopicPartition, s)
		}
	}
	summary := fmt.Sprintf("%s checked in %s: %d damaged", plural(res.Checked, "partition", "partitions"), strings.Join(dirs, ", "), res.Damaged)
	if ranges > 0 {
		summary += fmt.Sprintf(" (%s)", plural(ranges, "damaged range", "damaged ranges"))
	}
	if problems > 0 {
		summary += ", " + plural(problems, "index problem", "index problems")
	}
	fmt.Fprintln(w, summary)
	for _, r := range reports {
		if r.Damaged() {
			fmt.Fprintf(w, "to repair, with the broker stopped: wren storage repair --dir %s %s --skip|--truncate  (see wren storage repair --help)\n",
				parentOf(r.Dir), r.TopicPartition)
		}
	}
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "."
}

func storageRepairCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "repair",
		Usage:     "remove a partition's damaged data, with the broker stopped; a dry run unless --execute",
		ArgsUsage: "TOPIC-PARTITION --skip|--truncate",
		Description: "Repairs the damage `wren storage check` reports in one partition, in one of two modes:\n" +
			"  --skip      removes each damaged byte range from its segment. The offsets it held become a\n" +
			"              gap (Kafka logs allow gaps, as compaction makes them); every other record keeps\n" +
			"              its offset, and no offset is handed out again. Drops only the damaged records.\n" +
			"  --truncate  cuts the log at the first damaged range: it and everything after it go, valid\n" +
			"              records included, and new writes reuse those offsets, so a consumer that read\n" +
			"              them before sees different records there. For when the data after the damage\n" +
			"              is worth less than a log without gaps.\n" +
			"Either way the damaged records are lost: once replication lands, a replica repairs itself\n" +
			"from a healthy one instead. The plan (what goes, how many records: exact for valid ones, a\n" +
			"bound for the damaged range) is printed; nothing changes without --execute. --execute needs\n" +
			"the broker stopped (it takes the data directory's lock) and is crash-safe: interrupted, it\n" +
			"leaves the partition damaged as before or repaired, and running it again finishes the job.\n" +
			"The next broker start rebuilds the indexes and brings the partition back online.",
		Flags: dataDirFlags(
			&ucli.BoolFlag{Name: "skip", Usage: "remove the damaged ranges only; their offsets become a gap"},
			&ucli.BoolFlag{Name: "truncate", Usage: "cut the log at the first damaged range, dropping everything after it"},
			&ucli.BoolFlag{Name: "execute", Usage: "do the repair (default: print the plan only)"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, 1, "one TOPIC-PARTITION")
			if err != nil {
				return err
			}
			tp, err := engine.ParseTopicPartitionDir(c.Args().First())
			if err != nil {
				return fmt.Errorf("%w: %q: want TOPIC-PARTITION, as t-0", ErrUsage, c.Args().First())
			}
			var mode engine.RepairMode
			switch {
			case c.Bool("skip") && c.Bool("truncate"):
				return fmt.Errorf("%w: give one of --skip and --truncate, not both", ErrUsage)
			case c.Bool("skip"):
				mode = engine.RepairSkip
			case c.Bool("truncate"):
				mode = engine.RepairTruncate
			default:
				return fmt.Errorf("%w: say how to repair: --skip (the damaged offsets become a gap) or --truncate (cut the log at the damage); see wren storage repair --help", ErrUsage)
			}
			dirs, err := dataDirs(c, env)
			if err != nil {
				return err
			}
			return repairStorage(env, vfs.NewOS(), dirs, tp, mode, format, c.Bool("execute"))
		},
	}
}

// repairResult is storage repair's JSON document.
type repairResult struct {
	Dir            string         `json:"dir"`
	Topic          string         `json:"topic"`
	Partition      int32          `json:"partition"`
	Mode           string         `json:"mode"`
	Executed       bool           `json:"executed"`
	Damage         []damageResult `json:"damage"`
	Steps          []string       `json:"steps"`
	Gaps           []gapResult    `json:"gaps"`
	RecordsDropped int64          `json:"records_dropped"`
	// DamagedRecordsAtMost is null when unknown.
	DamagedRecordsAtMost *int64 `json:"damaged_records_at_most"`
	LogEndOffset         int64  `json:"log_end_offset"`
	// ReusedFrom is null when no offset is reused.
	ReusedFrom *int64 `json:"reused_from"`
}

type gapResult struct {
	First int64 `json:"first"`
	// Last is -1 when unknown.
	Last int64 `json:"last"`
}

func repairStorage(env Env, fsys vfs.FS, dirs []string, tp engine.TopicPartition, mode engine.RepairMode, format outputFormat, execute bool) error {
	dataDir := ""
	for _, d := range dirs {
		if st, err := fsys.Stat(d + "/" + tp.String()); err == nil && st.IsDir() {
			dataDir = d
			break
		}
	}
	if dataDir == "" {
		return fmt.Errorf("no partition %s in %s", tp, strings.Join(dirs, ", "))
	}
	plan, err := engine.PlanRepair(fsys, dataDir, tp, mode)
	if errors.Is(err, engine.ErrNoDamage) {
		fmt.Fprintf(env.Stdout, "%s: no damage found in %s; nothing to repair\n", tp, dataDir)
		return nil
	}
	if err != nil {
		return err
	}
	if execute {
		if err := plan.Execute(fsys); err != nil {
			return err
		}
	}
	res := repairResult{Dir: dataDir, Topic: tp.Topic, Partition: tp.Partition, Mode: mode.String(), Executed: execute,
		Damage: damageResults(plan.Damage), Steps: plan.Describe(), RecordsDropped: plan.RecordsDropped, LogEndOffset: plan.LogEndOffset}
	for _, g := range plan.Gaps {
		res.Gaps = append(res.Gaps, gapResult{First: g.First, Last: g.Last})
	}
	if plan.DamagedOffsets >= 0 {
		res.DamagedRecordsAtMost = &plan.DamagedOffsets
	}
	if plan.ReusedFrom >= 0 {
		res.ReusedFrom = &plan.ReusedFrom
	}
	err = printResult(env.Stdout, format, res, func(w io.Writer) {
		if execute {
			fmt.Fprintf(w, "repaired %s in %s (--%s):\n", tp, dataDir, mode)
		} else {
			fmt.Fprintf(w, "plan to repair %s in %s (--%s):\n", tp, dataDir, mode)
		}
		for _, s := range res.Steps {
			fmt.Fprintf(w, "  %s\n", s)
		}
	})
	if err == nil && !execute {
		fmt.Fprintln(env.Stderr, "dry run: nothing was changed; with the broker stopped, add --execute to repair")
	}
	return err
}
