package config

import (
	"strconv"
	"strings"
)

// UplinkPausedKey is the cluster-wide dynamic broker config that pauses
// the link [uplink.NAME] on every node: "true" pauses it, deleting the
// key (or "false") resumes it. It is set at run time only, on the BROKER
// resource "" (`wren uplink pause|resume`), so it is durable in the
// metadata log and reaches every node with the image; it is no key of
// the file and DescribeConfigs does not list it (`wren uplink status`
// shows a paused link).
func UplinkPausedKey(name string) string { return "uplink." + name + ".paused" }

// uplinkPausedName is the link an uplink.NAME.paused key names.
func uplinkPausedName(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "uplink.")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, ".paused")
	if !ok || !validUplinkName(name) {
		return "", false
	}
	return name, true
}

// parseUplinkPaused checks a run-time value of uplink.NAME.paused: a
// boolean, on the cluster-wide layer only (a link paused on some nodes
// would be forwarded by whichever node leads a partition).
func parseUplinkPaused(name, value string, perBroker bool) (any, error) {
	if perBroker {
		return nil, &AlterError{Err: ErrNotDynamic, Message: "Cannot update these configs for one broker: " + name +
			" pauses a link on every node: set it on the cluster-wide default (the BROKER resource named \"\")"}
	}
	b, err := strconv.ParseBool(value)
	if err != nil || (value != "true" && value != "false") {
		return nil, &AlterError{Err: ErrInvalidValue, Message: "Invalid value " + value + " for configuration " + name + ": Expected value to be either true or false"}
	}
	return b, nil
}

// UplinksPaused are the links the cluster-wide dynamic layer pauses.
func UplinksPaused(clusterDefault map[string]string) map[string]bool {
	out := map[string]bool{}
	for k, v := range clusterDefault {
		if name, ok := uplinkPausedName(k); ok && v == "true" {
			out[name] = true
		}
	}
	return out
}
