package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ParsePerIPOverrides reads max.connections.per.ip.overrides in Kafka's
// format: address:count pairs separated by commas, an IPv6 address in
// brackets. Host names are refused: resolved once at start, they would go
// stale while the broker runs.
func ParsePerIPOverrides(s string) (map[netip.Addr]int, error) {
	out := map[netip.Addr]int{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		i := strings.LastIndexByte(item, ':')
		if i <= 0 {
			return nil, fmt.Errorf("%q is not address:count", item)
		}
		host, count := strings.TrimSuffix(strings.TrimPrefix(item[:i], "["), "]"), item[i+1:]
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return nil, fmt.Errorf("%q: %s is not an IP address (wren takes no host names here)", item, host)
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: count %q is not a number >= 0", item, count)
		}
		addr = addr.Unmap()
		if _, dup := out[addr]; dup {
			return nil, fmt.Errorf("%s is listed twice", addr)
		}
		out[addr] = n
	}
	return out, nil
}
