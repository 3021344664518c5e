package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Run-time links (`wren uplink add|remove`): a link may be defined by
// cluster-wide dynamic broker configs uplink.NAME.KEY instead of an
// [uplink.NAME] table, KEY any key of a link's table (bootstrap.servers,
// topics, ...; a list is comma-separated). They are set on the BROKER
// resource "" only, so they are durable in the metadata log and reach
// every node with the image; a restart keeps them. They are checked by
// the code that checks the file's tables (uplinkDraft.set,
// checkUplinks): key by key at the controller and on the node a request
// arrives at (ValidateBrokerConfig, CheckUplinkLayer), and again by each
// node that runs the link (RuntimeUplinks), which also loads its TLS
// files. A password is never stored in the metadata log:
// uplink.NAME.sasl.password is refused, and a run-time link takes its
// password from uplink.NAME.sasl.password.file (a file on every node) or
// the environment variable UplinkPasswordEnv(NAME), as a file's link
// does. A link of the same name in a node's file wins on that node.

// UplinkKey is the cluster-wide dynamic config that sets key of the
// run-time link name: uplink.NAME.KEY.
func UplinkKey(name, key string) string { return "uplink." + name + "." + key }

// UplinkKeys are the keys a link takes, in order: the keys of an
// [uplink.NAME] table, which are the KEYs of uplink.NAME.KEY.
func UplinkKeys() []string { return slices.Sorted(maps.Keys(uplinkKeys)) }

// uplinkLinkKey splits uplink.NAME.KEY, a run-time link's key (any KEY
// but "paused", which UplinkPausedKey is).
func uplinkLinkKey(key string) (name, sub string, ok bool) {
	rest, ok := strings.CutPrefix(key, "uplink.")
	if !ok {
		return "", "", false
	}
	name, sub, ok = strings.Cut(rest, ".")
	if !ok || sub == "" || sub == "paused" || !validUplinkName(name) {
		return "", "", false
	}
	return name, sub, true
}

// IsUplinkKey says whether key is a run-time link's key
// (uplink.NAME.KEY) or pauses a link (uplink.NAME.paused).
func IsUplinkKey(key string) bool {
	if _, ok := uplinkPausedName(key); ok {
		return true
	}
	_, _, ok := uplinkLinkKey(key)
	return ok
}

// parseUplinkLinkValue checks one run-time link key's value, as the
// file's [uplink.NAME] table checks it.
func parseUplinkLinkValue(key, value string, perBroker bool) (any, error) {
	name, sub, _ := uplinkLinkKey(key)
	if perBroker {
		return nil, &AlterError{Err: ErrNotDynamic, Message: "Cannot update these configs for one broker: " + key +
			" defines a link of every node: set it on the cluster-wide default (the BROKER resource named \"\")"}
	}
	if sub == "sasl.password" || sub == "sasl.jaas.config" {
		return nil, &AlterError{Err: ErrInvalidValue, Message: key + ": a password is never stored in the cluster's metadata: put it in a file named by " +
			UplinkKey(name, "sasl.password.file") + " on every node, or in the environment variable " + UplinkPasswordEnv(name) + " of every node"}
	}
	e, ok := uplinkKeys[sub]
	if !ok {
		return nil, &AlterError{Err: ErrUnknownConfig, Message: "Unknown uplink config name: " + key + " (known: " + strings.Join(UplinkKeys(), ", ") + ")"}
	}
	v, err := parseString(e.Type, value)
	if err == nil {
		d := newUplinkDraft(name, Position{})
		err = d.set(sub, v)
	}
	if err != nil {
		return nil, invalidValue(key, value, err)
	}
	return v, nil
}

// newUplinkDraft is a link with the defaults of a table that sets
// nothing.
func newUplinkDraft(name string, pos Position) *uplinkDraft {
	d := &uplinkDraft{Uplink: Uplink{Name: name, Enabled: true, StartPosition: "earliest", SecurityProtocol: ProtocolPlaintext,
		VerifyHostname: true, Compression: "none", TailSettle: DefaultUplinkTailSettle,
		MaxBacklogBytes: DefaultUplinkMaxBacklogBytes, BacklogFullPolicy: BacklogDropOldest, Pos: pos}, seen: map[string]Position{}}
	d.SSL.Listener = "uplink " + name
	d.SSL.keys = map[string]string{}
	for _, k := range sslKeys {
		d.SSL.keys[k] = "uplink." + name + "." + k
	}
	return d
}

// runtimeUplinks reads the run-time links of the cluster-wide dynamic
// layer, in name order, as the file's tables are read; a link with an
// error is left out and its errors are returned.
func runtimeUplinks(clusterDefault map[string]string, loadTLS bool) ([]Uplink, Errors) {
	l := &loader{file: "cluster-wide dynamic config", runtime: true}
	for _, key := range slices.Sorted(maps.Keys(clusterDefault)) {
		name, sub, ok := uplinkLinkKey(key)
		if !ok {
			continue
		}
		v, err := parseUplinkLinkValue(key, clusterDefault[key], false)
		var d *uplinkDraft
		for _, x := range l.uplinks {
			if x.Name == name {
				d = x
			}
		}
		if d == nil {
			d = newUplinkDraft(name, Position{})
			l.uplinks = append(l.uplinks, d)
		}
		d.seen[sub] = Position{}
		if err != nil {
			l.errorf(Position{}, key, "%v", err)
			continue
		}
		_ = d.set(sub, v) // checked by parseUplinkLinkValue
	}
	failed := map[string]bool{}
	for _, e := range l.errs {
		if name, _, ok := uplinkLinkKey(e.Key); ok {
			failed[name] = true
		}
	}
	var drafts []*uplinkDraft
	for _, d := range l.uplinks {
		if !failed[d.Name] {
			drafts = append(drafts, d)
		}
	}
	l.uplinks = drafts
	return l.checkUplinks(loadTLS), l.errs
}

// RuntimeUplinks are the run-time links (uplink.NAME.KEY) of the
// cluster-wide dynamic layer, in name order, each checked as a file's
// table is, its TLS files loaded. A link with an error is left out, its
// errors returned (each names its key).
func RuntimeUplinks(clusterDefault map[string]string) ([]Uplink, []error) {
	links, errs := runtimeUplinks(clusterDefault, true)
	var out []error
	for _, e := range errs {
		out = append(out, errors.New(e.Msg))
	}
	return links, out
}

// CheckUplinkLayer checks the run-time links of a cluster-wide dynamic
// layer as a whole, as it would be after an AlterConfigs: every link has
// its required keys, and its ssl.* and sasl.* keys go with its
// security.protocol. Its TLS files are not read: they are the nodes'.
// The error (ErrInvalidValue) names the key to fix.
func CheckUplinkLayer(clusterDefault map[string]string) error {
	_, errs := runtimeUplinks(clusterDefault, false)
	if len(errs) == 0 {
		return nil
	}
	return &AlterError{Err: ErrInvalidValue, Message: errs[0].Msg}
}

// CheckUplinkChange checks a change of broker resource's dynamic configs
// (resource "" for the cluster-wide defaults) that sets or deletes keys,
// layer being the resource's configs after it: when it touches a run-time
// link's key, a link is set on the cluster-wide layer only, and that
// layer's links are checked as a whole (CheckUplinkLayer).
func CheckUplinkChange(resource string, keys []string, layer map[string]string) error {
	touched := false
	for _, k := range keys {
		if _, _, ok := uplinkLinkKey(k); ok {
			touched = true
			if _, set := layer[k]; set && resource != "" {
				_, err := parseUplinkLinkValue(k, layer[k], true)
				return err
			}
		}
	}
	if !touched || resource != "" {
		return nil
	}
	return CheckUplinkLayer(layer)
}

// CheckUplinkName says why name cannot name a link, nil if it can.
func CheckUplinkName(name string) error {
	if !validUplinkName(name) {
		return fmt.Errorf("uplink name %q: use lower-case letters, digits, '-' and '_' (at most 64)", truncate(name, 40))
	}
	return nil
}
