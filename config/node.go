package config

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// One file for the whole cluster: the same file is copied to every node,
// and each node finds its own entry of controller.quorum.voters, by
// Options.NodeID (`wren serve --node-id`, WREN_NODE_ID) or, when neither
// that nor node.id is given, by the voter whose host is an address of this
// host. Settings that differ between nodes go in [node.N.SECTION] tables
// ([node.2.broker] log.dirs = [...]), which override the shared ones on
// node N only; so do a listener's own TLS settings ([node.2.security]
// listener.name.external.ssl.keystore.location = ..., a node's own key
// store for one listener), key by key over the shared ones of [security].
// A node selected so, whose file gives no listeners, listens
// for clients on every interface at port 9092 and for peers at its voter
// entry's port, and advertises its voter host to clients unless
// advertised.listeners says otherwise. Per-node files (node.id set, no
// Options.NodeID) keep working unchanged.

// Options select this node in a file that may describe the whole
// cluster.
type Options struct {
	// NodeID is this node's id; -1 means node.id from the file, else the
	// voter at a local address. It overrides the file's node.id.
	NodeID int32
	// IsLocal reports whether host (a voter's) names an address of this
	// host; nil: the host's network interfaces.
	IsLocal func(host string) bool
	// Serve is set when the config is for one node's work (`wren serve`,
	// `config dump`, `storage check` and `storage repair`, all through
	// LoadNode), which must know which voter it is: a shared file in
	// which no voter, or several, are at a local address is then refused.
	// Without it (config check) such a file keeps the default node.id, as
	// a per-node file would.
	Serve bool
}

// LoadNode is the config of this node, found as `wren serve` finds it:
// path names the file ("" means the built-in single-node defaults), and
// nodeID (NoNode when not given) is --node-id or WREN_NODE_ID, which
// selects the node's entry of controller.quorum.voters and applies its
// [node.N.*] tables; without it a file shared by the cluster is matched
// by this host's addresses, and refused when none or several match. Every
// command that acts on one node's data or settings loads it here, so none
// of them works on another node's directory by mistake.
func LoadNode(path string, nodeID int32) (*Config, error) {
	if path == "" {
		c := Default()
		if nodeID != NoNode && nodeID != c.NodeID {
			return nil, fmt.Errorf("config: node id %d needs a config file that lists it in controller.quorum.voters", nodeID)
		}
		return c, nil
	}
	return LoadWith(path, Options{NodeID: nodeID, Serve: true})
}

// NoNode is Options.NodeID when no id is given.
const NoNode int32 = -1

// nodeNotFound starts the message when no voter, or more than one, is at
// an address of this host, and no node id was given.
const nodeNotFound = "config: this node is not found in controller.quorum.voters"

// NodeIDFromEnv reads WREN_NODE_ID; NoNode when it is unset.
func NodeIDFromEnv() (int32, error) {
	s := os.Getenv("WREN_NODE_ID")
	if s == "" {
		return NoNode, nil
	}
	return ParseNodeID(s)
}

// ParseNodeID reads a node id given on the command line or in the
// environment.
func ParseNodeID(s string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || n < 0 {
		return NoNode, fmt.Errorf("config: node id %q: want a non-negative integer", s)
	}
	return int32(n), nil
}

// defaultClientPort is the client port of a node selected in a shared
// file without listeners: Kafka's.
const defaultClientPort = 9092

// selectNode picks this node's id and applies its [node.N.*] tables.
func (l *loader) selectNode(o Options) {
	const votersKey = "controller.quorum.voters"
	var voters []Voter
	if g, ok := l.explicit[votersKey]; ok {
		for _, s := range g.value.([]string) {
			if v, err := ParseVoter(s); err == nil {
				voters = append(voters, v)
			}
		}
	}
	ids := make([]int32, len(voters))
	for i, v := range voters {
		ids[i] = v.ID
	}
	for id, pos := range l.nodeTables {
		if !slices.Contains(ids, id) {
			// Settings for a node that is not a voter would never apply:
			// a typo in the id, or a voter removed from the list.
			l.errorf(pos, votersKey, "table [node.%d.*]: node %d is not a voter (%s lists node ids %s); "+
				"a node's own settings go in [node.N.SECTION] for one of them", id, id, votersKey, joinIDs(ids))
		}
	}
	id := o.NodeID
	_, fileID := l.explicit["node.id"]
	switch {
	case id >= 0:
	case fileID || len(voters) <= 1:
		// A per-node file, or a single node: as before.
		id = NoNode
	case !o.Serve && o.IsLocal == nil:
		// config check and dump: no name lookups (they would make the
		// result depend on DNS, and a missing resolver takes seconds),
		// the default node.id as for a per-node file.
		id = NoNode
	default:
		isLocal := o.IsLocal
		if isLocal == nil {
			isLocal = hostIsLocal
		}
		var found []int32
		for _, v := range voters {
			if isLocal(v.Host) {
				found = append(found, v.ID)
			}
		}
		pos := l.explicit[votersKey].pos
		switch {
		case len(found) == 1:
			id = found[0]
		case !o.Serve:
			id = NoNode
		case len(found) == 0:
			l.add(&Error{File: l.file, Pos: pos, Key: votersKey, Msg: fmt.Sprintf(
				"%s: node.id is not set and no voter's host is an address of this host; give --node-id (or WREN_NODE_ID)", nodeNotFound)})
			return
		default:
			l.add(&Error{File: l.file, Pos: pos, Key: votersKey, Msg: fmt.Sprintf(
				"%s: node.id is not set and voters %s are all at addresses of this host; give --node-id (or WREN_NODE_ID)",
				nodeNotFound, joinIDs(found))})
			return
		}
	}
	if id == NoNode {
		return
	}
	self := slices.IndexFunc(voters, func(v Voter) bool { return v.ID == id })
	if self < 0 && len(voters) > 0 {
		l.add(&Error{File: l.file, Key: "node.id", Msg: fmt.Sprintf("node id %d (given to serve) is not in %s", id, votersKey)})
		return
	}
	l.explicit["node.id"] = given{value: int64(id), source: SourceStaticBroker}
	for name, g := range l.nodeValues[id] {
		l.explicit[name] = g
	}
	for name, values := range l.nodeListenerSSL[id] {
		// listener.name.NAME.ssl.* of [node.N.security] override the
		// shared ones of [security], key by key.
		if l.listenerSSL == nil {
			l.listenerSSL = map[string]map[string]given{}
		}
		if l.listenerSSL[name] == nil {
			l.listenerSSL[name] = map[string]given{}
		}
		for sub, g := range values {
			l.listenerSSL[name][sub] = g
		}
	}
	if self < 0 {
		return
	}
	v := voters[self]
	if _, ok := l.explicit["listeners"]; !ok && len(voters) > 1 {
		l.explicit["listeners"] = given{value: []string{
			fmt.Sprintf("PLAINTEXT://0.0.0.0:%d", defaultClientPort),
			"CONTROLLER://" + net.JoinHostPort("0.0.0.0", strconv.Itoa(v.Port)),
		}, source: SourceStaticBroker}
		if _, ok := l.explicit["advertised.listeners"]; !ok {
			l.explicit["advertised.listeners"] = given{value: []string{
				"PLAINTEXT://" + net.JoinHostPort(v.Host, strconv.Itoa(defaultClientPort)),
			}, source: SourceStaticBroker}
		}
	}
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ", ")
}

// hostIsLocal reports whether host resolves to an address of one of this
// host's network interfaces.
func hostIsLocal(host string) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else if ips, err = net.LookupIP(host); err != nil {
		return false
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		for _, ip := range ips {
			if n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}
