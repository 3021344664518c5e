package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parseErrs parses in as config.toml and returns its error lines.
func parseErrs(t *testing.T, in string) []string {
	t.Helper()
	_, err := Parse("config.toml", []byte(in))
	if err == nil {
		return nil
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error is %T, not Errors: %v", err, err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) is false")
	}
	return strings.Split(err.Error(), "\n")
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		// Syntax.
		{"syntax missing value", "[broker]\nnode.id = \n",
			[]string{"config.toml:2:11: syntax error: unexpected character U+000A at start of value"}},
		{"syntax unclosed header", "[broker\n",
			[]string{"config.toml:1:8: syntax error: expected ']' to close table name"}},
		{"syntax keeps earlier errors", "[storage]\nlog.segment.bytez = 1\nx = = 2\n",
			[]string{
				"config.toml:2:1: unknown key log.segment.bytez (did you mean log.segment.bytes?)",
				"config.toml:3:5: syntax error: unexpected character U+003D '=' at start of value",
			}},

		// Unknown names.
		{"unknown key", "[storage]\nlog.retention.ms = 1\nlog.retention.hourz = 5\n",
			[]string{"config.toml:3:1: unknown key log.retention.hourz (did you mean log.retention.hours?)"}},
		{"unknown key in another section's spelling", "[broker]\nlog.retention.hourz = 5\n",
			[]string{"config.toml:2:1: unknown key log.retention.hourz (did you mean log.retention.hours, in [storage]?)"}},
		{"unknown key far from all", "[storage]\nfrobnicate = 1\n",
			[]string{"config.toml:2:1: unknown key frobnicate"}},
		{"renamed kafka key", "[broker]\nbroker.id = 1\n",
			[]string{"config.toml:2:1: unknown key broker.id (did you mean node.id?)"}},
		{"log.segment.ms is log.roll.ms", "[storage]\nlog.segment.ms = 1\n",
			[]string{"config.toml:2:1: unknown key log.segment.ms (did you mean log.roll.ms?)"}},
		{"unknown section near", "[stroage]\nlog.segment.bytes = 1\n",
			[]string{"config.toml:1:2: unknown section [stroage] (did you mean [storage]?)"}},
		{"unknown section kafka prefix", "[log]\nsegment.bytes = 1\n",
			[]string{"config.toml:1:2: unknown section [log]: keys keep their full Kafka name inside a section, as log.dirs in [broker]"}},
		{"unknown section far", "[zzzzzz]\n",
			[]string{"config.toml:1:2: unknown section [zzzzzz]: the sections are broker, cluster, topics, storage, replication, groups, producers, security, http, logging"}},
		{"array of tables", "[[broker]]\nnode.id = 1\n",
			[]string{"config.toml:1:3: arrays of tables ([[broker]]) have no place in the config file"}},

		// Wrong section.
		{"kafka key in wrong section", "[broker]\nlog.segment.bytes = 134217728\n",
			[]string{"config.toml:2:1: key log.segment.bytes belongs in section [storage]"}},
		{"own key in kafka section", "[broker]\nlisten = \"127.0.0.1:1\"\n",
			[]string{"config.toml:2:1: key listen belongs in section [http]"}},
		{"kafka key in own section", "[logging]\nnode.id = 1\n",
			[]string{"config.toml:2:1: key node.id belongs in section [broker]"}},
		{"full own name in wrong section", "[broker]\nhttp.listen = \"127.0.0.1:1\"\n",
			[]string{"config.toml:2:1: key http.listen belongs in section [http], as listen"}},
		{"outside any section", "node.id = 1\n[broker]\n",
			[]string{"config.toml:1:1: key node.id is outside any section: it belongs in [broker]"}},
		{"unknown outside any section", "nodeid = 1\n",
			[]string{"config.toml:1:1: unknown key nodeid (did you mean node.id, in [broker]?)"}},

		// Duplicates.
		{"duplicate key", "[broker]\nnode.id = 1\nnode.id = 1\n",
			[]string{"config.toml:3:1: duplicate key node.id (first set at 2:1)"}},
		{"duplicate quoted and dotted", "[storage]\nlog.segment.bytes = 2097152\n\"log.segment.bytes\" = 2097152\n",
			[]string{"config.toml:3:1: duplicate key log.segment.bytes (first set at 2:1)"}},
		{"duplicate through sub-table", "[storage]\nlog.segment.bytes = 2097152\n[storage.log]\nsegment.bytes = 2097152\n",
			[]string{"config.toml:4:1: duplicate key log.segment.bytes (first set at 2:1)"}},
		{"duplicate table", "[broker]\n[topics]\n[broker]\n",
			[]string{"config.toml:3:2: table [broker] defined twice (first at 1:2)"}},

		// Types.
		{"string for int", "[storage]\nlog.segment.bytes = \"128MiB\"\n",
			[]string{`config.toml:2:21: log.segment.bytes: expected an integer, got string "128MiB"`}},
		{"float for int", "[broker]\nnode.id = 1.5\n",
			[]string{"config.toml:2:11: node.id: expected an integer, got float 1.5"}},
		{"date for int", "[broker]\nnode.id = 1979-05-27\n",
			[]string{"config.toml:2:11: node.id: expected an integer, got date-time 1979-05-27"}},
		{"int too wide", "[broker]\nnode.id = 3000000000\n",
			[]string{"config.toml:2:11: node.id: 3000000000 is out of range for int (-2147483648 to 2147483647)"}},
		{"short too wide", "[groups]\noffsets.topic.replication.factor = 40000\n",
			[]string{"config.toml:2:36: offsets.topic.replication.factor: 40000 is out of range for short (-32768 to 32767)"}},
		{"int for bool", "[topics]\nauto.create.topics.enable = 1\n",
			[]string{"config.toml:2:29: auto.create.topics.enable: expected true or false, got integer 1"}},
		{"int for string", "[topics]\ncompression.type = 1\n",
			[]string{"config.toml:2:20: compression.type: expected a string, got integer 1"}},
		{"bool for list", "[broker]\nlog.dirs = true\n",
			[]string{`config.toml:2:12: log.dirs: expected a list of strings like ["a", "b"], got boolean true`}},
		{"int in list", "[broker]\nlog.dirs = [\"/a\", 2]\n",
			[]string{"config.toml:2:19: log.dirs: expected a list of strings, got integer 2 in it"}},
		{"string for double", "[storage]\nlog.cleaner.min.cleanable.ratio = \"half\"\n",
			[]string{`config.toml:2:35: log.cleaner.min.cleanable.ratio: expected a number, got string "half"`}},

		// Validators.
		{"below range", "[storage]\nlog.segment.bytes = 1000\n",
			[]string{"config.toml:2:21: log.segment.bytes: invalid value 1000: Value must be at least 1048576"}},
		{"above range", "[replication]\nleader.imbalance.per.broker.percentage = 101\n",
			[]string{"config.toml:2:42: leader.imbalance.per.broker.percentage: invalid value 101: Value must be no more than 100"}},
		{"double range", "[storage]\nlog.cleaner.min.cleanable.ratio = 1.5\n",
			[]string{"config.toml:2:35: log.cleaner.min.cleanable.ratio: invalid value 1.5: Value must be no more than 1.0"}},
		{"nan", "[storage]\nlog.cleaner.min.cleanable.ratio = nan\n",
			[]string{"config.toml:2:35: log.cleaner.min.cleanable.ratio: invalid value nan: Value must be at least 0.0"}},
		{"one of", "[topics]\ncompression.type = \"brotli\"\n",
			[]string{`config.toml:2:20: compression.type: invalid value "brotli": allowed values are uncompressed, zstd, lz4, snappy, gzip, producer`}},
		{"list member", "[storage]\nlog.cleanup.policy = [\"delete\", \"shred\"]\n",
			[]string{`config.toml:2:1: log.cleanup.policy: invalid value ["delete", "shred"]: "shred" is not allowed; allowed values are compact, delete`}},
		{"list duplicate", "[storage]\nlog.cleanup.policy = [\"compact\", \"compact\"]\n",
			[]string{`config.toml:2:1: log.cleanup.policy: invalid value ["compact", "compact"]: Values must not be duplicated: compact`}},
		{"flush policy", "[storage]\nlog.flush.policy = \"always\"\n",
			[]string{`config.toml:2:20: log.flush.policy: invalid value "always": allowed values are ack, interval`}},
		// wren's own sections: the setting's whole name, not "format".
		{"logging format", "[logging]\nformat = \"xml\"\n",
			[]string{`config.toml:2:10: logging.format: invalid value "xml": allowed values are text, json`}},
		{"cluster id", "[cluster]\ncluster.id = \"edge\"\n",
			[]string{"config.toml:2:14: cluster.id: invalid value \"edge\": cluster id \"edge\" is not a base64 UUID like `kafka-storage random-uuid` prints (22 characters)"}},
		{"http listen", "[http]\nlisten = \"9644\"\n",
			[]string{`config.toml:2:10: http.listen: invalid value "9644": "9644" is not host:port`}},
		{"empty log.dirs", "[broker]\nlog.dirs = []\n",
			[]string{"config.toml:2:1: log.dirs: invalid value []: List must not be empty"}},

		// Voters.
		{"voter syntax and duplicates, all of them",
			"[cluster]\ncontroller.quorum.voters = [\"1@a:9093\", \"1@b:9093\", \"x@c:9093\", \"4@:9093\", \"5@d\", \"6@a:9093\"]\n",
			[]string{`config.toml:2:1: controller.quorum.voters: invalid value ["1@a:9093", "1@b:9093", "x@c:9093", "4@:9093", "5@d", "6@a:9093"]: ` +
				`node id 1 is listed twice (1@a:9093 and 1@b:9093); ` +
				`voter "x@c:9093": node id "x" is not a number from 0 to 2147483647; ` +
				`voter "4@:9093": the host is empty, and peers need an address to dial; ` +
				`voter "5@d": "d" is not host:port; ` +
				`nodes 1 and 6 share the address a:9093`}},
		{"own id missing", "[broker]\nnode.id = 4\n[cluster]\ncontroller.quorum.voters = [\"1@a:9093\", \"2@b:9093\", \"3@c:9093\"]\n",
			[]string{"config.toml:2:1: node.id 4 is not in controller.quorum.voters (node ids 1, 2, 3): every node is a voter"}},
		{"own id missing, only voters set", "[cluster]\ncontroller.quorum.voters = [\"2@b:9093\"]\n",
			[]string{"config.toml:2:1: node.id 1 is not in controller.quorum.voters (node ids 2): every node is a voter"}},

		// Replication factors.
		{"rf above voters", "[topics]\ndefault.replication.factor = 3\n",
			[]string{"config.toml:2:1: default.replication.factor 3 is above the 1 node(s) of controller.quorum.voters"}},
		{"offsets rf above voters", "[groups]\noffsets.topic.replication.factor = 2\n",
			[]string{"config.toml:2:1: offsets.topic.replication.factor 2 is above the 1 node(s) of controller.quorum.voters"}},
		{"min isr above rf", "[topics]\nmin.insync.replicas = 2\n",
			[]string{"config.toml:2:1: min.insync.replicas 2 is above default.replication.factor 1: acks=all writes to new topics would always fail"}},
		{"min isr above explicit rf",
			"[cluster]\ncontroller.quorum.voters = [\"1@a:9093\", \"2@b:9093\", \"3@c:9093\"]\n[topics]\ndefault.replication.factor = 2\nmin.insync.replicas = 3\n",
			[]string{"config.toml:5:1: min.insync.replicas 3 is above default.replication.factor 2: acks=all writes to new topics would always fail"}},

		// Listeners.
		{"listener syntax", "[broker]\nlisteners = [\"PLAINTEXT:/127.0.0.1:9092\", \"CONTROLLER://127.0.0.1:70000\", \"P-X://h:1\"]\n",
			[]string{`config.toml:2:1: listeners: invalid value ["PLAINTEXT:/127.0.0.1:9092", "CONTROLLER://127.0.0.1:70000", "P-X://h:1"]: ` +
				`listener "PLAINTEXT:/127.0.0.1:9092" is not NAME://host:port; ` +
				`listener "CONTROLLER://127.0.0.1:70000": port "70000" is not a number from 0 to 65535; ` +
				`listener "P-X://h:1": name "P-X" must be letters, digits and _`}},
		{"listener problems, all of them",
			"[broker]\nlisteners = [\"PLAINTEXT://0.0.0.0:9092\", \"SSL://:9094\", \"INTERNAL://:9092\"]\nadvertised.listeners = [\"CONTROLLER://a:1\", \"FOO://b:2\", \"INTERNAL://0.0.0.0:9092\"]\n",
			[]string{
				"config.toml:2:1: ssl.keystore.location: listener SSL speaks TLS and needs a certificate: set it, or ssl.keystore.certificate.chain with ssl.keystore.key",
				"config.toml:2:1: listeners: PLAINTEXT://0.0.0.0:9092 and INTERNAL://:9092 use the same port",
				"config.toml:2:1: controller.listener.names: listener CONTROLLER is not in listeners",
				"config.toml:3:1: advertised.listeners: CONTROLLER://a:1 is a controller listener; clients are never sent there",
				"config.toml:3:1: advertised.listeners: FOO://b:2 names no listener in listeners",
				"config.toml:3:1: advertised.listeners: INTERNAL://0.0.0.0:9092 is not an address a client can dial",
				"config.toml:3:1: listeners: PLAINTEXT://0.0.0.0:9092 binds every interface, which clients cannot dial: give advertised.listeners an address for PLAINTEXT",
			}},
		{"only controller listeners", "[broker]\nlisteners = [\"CONTROLLER://:9093\"]\n",
			[]string{"config.toml:2:1: listeners: no listener for clients: every one is in controller.listener.names"}},

		// Contradicting settings.
		{"group session range", "[groups]\ngroup.min.session.timeout.ms = 2000000\n",
			[]string{"config.toml:2:1: group.min.session.timeout.ms (2000000) must be at most group.max.session.timeout.ms (1800000): no session timeout could be accepted"}},
		{"reported at the key that was set", "[groups]\ngroup.max.session.timeout.ms = 1000\n",
			[]string{"config.toml:2:1: group.min.session.timeout.ms (6000) must be at most group.max.session.timeout.ms (1000): no session timeout could be accepted"}},
		{"lease above election", "[cluster]\ncontroller.lease.ms = 5000\n",
			[]string{"config.toml:2:1: controller.lease.ms (5000) must be below controller.quorum.fetch.timeout.ms (2000): peers could elect a new controller while the old one still holds its lease"}},
		{"heartbeat not below lease", "[cluster]\ncontroller.heartbeat.interval.ms = 1500\n",
			[]string{"config.toml:2:1: controller.heartbeat.interval.ms (1500) must be below controller.lease.ms (1500): the lease would lapse between heartbeats"}},
		{"fetch wait above lag", "[replication]\nreplica.fetch.wait.max.ms = 40000\n",
			[]string{"config.toml:2:1: replica.fetch.wait.max.ms (40000) must be at most replica.lag.time.max.ms (30000): idle followers would drop out of the ISR"}},
		{"consumer heartbeat vs session",
			"[groups]\ngroup.consumer.heartbeat.interval.ms = 50000\ngroup.consumer.max.heartbeat.interval.ms = 60000\n",
			[]string{"config.toml:2:1: group.consumer.heartbeat.interval.ms (50000) must be below group.consumer.session.timeout.ms (45000): members would time out between heartbeats"}},
		{"message above frame", "[broker]\nsocket.request.max.bytes = 1000\n",
			[]string{"config.toml:2:1: message.max.bytes (1048588) must be below socket.request.max.bytes (1000): a produce request holding the largest batch could not be received"}},
		{"decompression cap below message", "[storage]\nmax.decompressed.batch.bytes = 1000\n",
			[]string{"config.toml:2:1: message.max.bytes (1048588) must be at most max.decompressed.batch.bytes (1000): an uncompressed batch that fits could not be compressed"}},
		{"compaction lags", "[storage]\nlog.cleaner.min.compaction.lag.ms = 10\nlog.cleaner.max.compaction.lag.ms = 5\n",
			[]string{"config.toml:2:1: log.cleaner.min.compaction.lag.ms (10) must be at most log.cleaner.max.compaction.lag.ms (5): no record could ever be compacted in time"}},

		// A refused value does not also trip a cross-check.
		{"bad value skips its cross-checks", "[broker]\nnode.id = -1\n[cluster]\ncontroller.quorum.voters = [\"2@b:9093\"]\n",
			[]string{"config.toml:2:11: node.id: invalid value -1: Value must be at least 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseErrs(t, tc.in)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("input:\n%s\ngot:\n%s\nwant:\n%s", tc.in, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// Every way TOML can spell [storage] log.segment.bytes gives the same setting.
func TestFlattening(t *testing.T) {
	for _, in := range []string{
		"[storage]\nlog.segment.bytes = 2097152\n",
		"[storage]\n\"log.segment.bytes\" = 2097152\n",
		"[storage]\n'log'.segment.\"bytes\" = 2097152\n",
		"[storage]\nlog.segment.bytes=2097152\n",
		"[storage]\nlog . segment . bytes = 2097152\n",
		"[storage.log]\nsegment.bytes = 2097152\n",
		"[storage.log.segment]\nbytes = 2097152\n",
		"[\"storage\"]\nlog.segment.bytes = 2097152\n",
		"storage.log.segment.bytes = 2097152\n",
		"storage = { log.segment.bytes = 2097152 }\n",
		"[storage]\nlog = { segment = { bytes = 2097152 } }\n",
		"[storage]\nlog.segment = { bytes = 2097152 }\n",
		"[storage]\nlog.segment.bytes = 0x200000\n",
		"[storage]\nlog.segment.bytes = 2_097_152\n",
		"[storage]\r\nlog.segment.bytes = 2097152 # trailing comment\r\n",
	} {
		c, err := Parse("config.toml", []byte(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if c.TopicDefaults.SegmentBytes != 2097152 {
			t.Errorf("%q: segment.bytes = %d", in, c.TopicDefaults.SegmentBytes)
		}
		if _, ok := c.Position("log.segment.bytes"); !ok {
			t.Errorf("%q: log.segment.bytes not recorded as set", in)
		}
	}
}

func TestListForms(t *testing.T) {
	c, err := Parse("config.toml", []byte("[groups]\ngroup.consumer.assignors = \"range, uniform\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.GroupConsumerAssignors, "|") != "range|uniform" {
		t.Errorf("comma-separated string: %q", c.GroupConsumerAssignors)
	}
}

// Kafka's precedence: ms over minutes over hours; hours and minutes in ms.
func TestRetentionPrecedence(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"", 168 * 3600 * 1000},
		{"log.retention.hours = 1\n", 3600 * 1000},
		{"log.retention.hours = 1\nlog.retention.minutes = 30\n", 30 * 60 * 1000},
		{"log.retention.hours = 1\nlog.retention.minutes = 30\nlog.retention.ms = 5\n", 5},
		{"log.retention.ms = 5\nlog.retention.hours = 1\n", 5},
		{"log.retention.hours = -1\n", -1},
		{"log.retention.ms = -1\n", -1},
	} {
		c, err := Parse("config.toml", []byte("[storage]\n"+tc.in))
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if c.TopicDefaults.RetentionMs != tc.want {
			t.Errorf("%q: retention.ms = %d, want %d", tc.in, c.TopicDefaults.RetentionMs, tc.want)
		}
	}
}

func TestDerivedDefaults(t *testing.T) {
	three := "[cluster]\ncontroller.quorum.voters = [\"1@a:9093\", \"2@b:9093\", \"3@c:9093\"]\n"
	for _, tc := range []struct {
		in                    string
		rf, minISR, offsetsRF int
	}{
		{"", 1, 1, 1},
		{"[cluster]\ncontroller.quorum.voters = [\"1@a:9093\", \"2@b:9093\"]\n", 2, 2, 2},
		{three, 3, 2, 3},
		{"[cluster]\ncontroller.quorum.voters = [\"1@a:1\", \"2@b:1\", \"3@c:1\", \"4@d:1\", \"5@e:1\"]\n", 3, 2, 3},
		{three + "[topics]\ndefault.replication.factor = 1\n", 1, 1, 3},
	} {
		c, err := Parse("config.toml", []byte(tc.in))
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if int(c.DefaultReplicationFactor) != tc.rf || int(c.TopicDefaults.MinInsyncReplicas) != tc.minISR || int(c.OffsetsTopicReplicationFactor) != tc.offsetsRF {
			t.Errorf("%q: rf %d min.isr %d offsets rf %d, want %d %d %d", tc.in, c.DefaultReplicationFactor,
				c.TopicDefaults.MinInsyncReplicas, c.OffsetsTopicReplicationFactor, tc.rf, tc.minISR, tc.offsetsRF)
		}
	}
}

func TestDefault(t *testing.T) {
	c := Default()
	if c.NodeID != 1 || len(c.Voters) != 1 || c.Voters[0] != (Voter{ID: 1, Host: "127.0.0.1", Port: 9093}) {
		t.Errorf("node %d voters %v", c.NodeID, c.Voters)
	}
	want := []Listener{{"PLAINTEXT", "127.0.0.1", 9092}, {"CONTROLLER", "127.0.0.1", 9093}}
	if len(c.Listeners) != 2 || c.Listeners[0] != want[0] || c.Listeners[1] != want[1] {
		t.Errorf("listeners %v", c.Listeners)
	}
	if strings.Join(c.LogDirs, ",") != "./wren-data" || c.LogFlushPolicy != FlushPolicyAck {
		t.Errorf("log.dirs %v flush %s", c.LogDirs, c.LogFlushPolicy)
	}
	if c.TopicDefaults.SegmentBytes != 128<<20 || c.AutoCreateTopicsEnable {
		t.Errorf("segment.bytes %d auto-create %v", c.TopicDefaults.SegmentBytes, c.AutoCreateTopicsEnable)
	}
	empty, err := Parse("empty.toml", nil)
	if err != nil || !empty.Equal(c) {
		t.Errorf("an empty file is not the defaults: %v", err)
	}
}

func TestTooManyErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("[storage]\n")
	for i := 0; i < 3*maxErrors; i++ {
		b.WriteString("nope")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(" = 1\n")
	}
	got := parseErrs(t, b.String())
	if len(got) != maxErrors+1 || !strings.Contains(got[maxErrors], "too many errors") {
		t.Errorf("%d errors, last %q", len(got), got[len(got)-1])
	}
}

func TestFileTooLarge(t *testing.T) {
	big := []byte("# " + strings.Repeat("x", MaxFileBytes) + "\n")
	if _, err := Parse("big.toml", big); !errors.Is(err, ErrFileTooLarge) {
		t.Errorf("Parse: %v", err)
	}
	path := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrFileTooLarge) {
		t.Errorf("Load: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestOddKeysStayOnOneLine(t *testing.T) {
	got := parseErrs(t, "[storage]\n\"a\\nb\" = 1\n[\"x y\"]\n[[\"\\t\"]]\n")
	want := []string{
		`config.toml:2:1: unknown key "a\nb"`,
		`config.toml:3:2: unknown section ["x y"]: the sections are broker, cluster, topics, storage, replication, groups, producers, security, http, logging`,
		`config.toml:4:3: arrays of tables ([["\t"]]) have no place in the config file`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDeepNesting(t *testing.T) {
	in := "[storage]\nlog = " + strings.Repeat("{a=", 5000) + "1" + strings.Repeat("}", 5000) + "\n"
	got := parseErrs(t, in)
	if len(got) != 1 || got[0] != "config.toml:2:53: key log.a.a... is nested more than 16 levels deep" {
		t.Errorf("got %q", got)
	}
}

func TestNumberForms(t *testing.T) {
	c := mustParse(t, "[storage]\nlog.cleaner.min.cleanable.ratio = 0x1\nlog.retention.bytes = 0o17\nlog.segment.bytes = 0b1000000000000000000000\nlog.roll.ms = +60_000\n")
	td := c.TopicDefaults
	if td.MinCleanableDirtyRatio != 1 || td.RetentionBytes != 15 || td.SegmentBytes != 1<<21 || td.SegmentMs != 60000 {
		t.Errorf("%v %v %v %v", td.MinCleanableDirtyRatio, td.RetentionBytes, td.SegmentBytes, td.SegmentMs)
	}
	got := parseErrs(t, "[storage]\nlog.cleaner.min.cleanable.ratio = 1e999\nlog.retention.bytes = 0x8000000000000000\n")
	want := []string{
		"config.toml:2:35: log.cleaner.min.cleanable.ratio: 1e999 is out of range for a double",
		"config.toml:3:23: log.retention.bytes: 0x8000000000000000 is out of range for long (-9223372036854775808 to 9223372036854775807)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
