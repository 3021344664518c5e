package cli

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The README's shell blocks run as written from a checkout: the binary is
// ./wren (scripts/build.sh), never a bare wren, which is not on PATH; the
// local cluster's walk-through finds the controller before it kills it;
// and the directory scripts/local-cluster.sh makes is ignored by git.
func TestReadmeCommands(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	inBlock, quorumSeen := false, false
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = strings.HasPrefix(line, "```sh")
			continue
		}
		if !inBlock {
			continue
		}
		cmd := strings.TrimSpace(line)
		if strings.HasPrefix(cmd, "wren ") || strings.Contains(cmd, "| wren ") || strings.Contains(cmd, "$(wren ") {
			t.Errorf("README.md:%d runs a bare wren, which is not on PATH: %s", i+1, cmd)
		}
		if strings.HasPrefix(cmd, "./wren cluster quorum") || strings.HasPrefix(cmd, "./wren cluster health") {
			quorumSeen = true
		}
		if strings.HasPrefix(cmd, "scripts/local-cluster.sh kill") && !quorumSeen {
			t.Errorf("README.md:%d kills a node before saying how to find the controller: %s", i+1, cmd)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	check := exec.Command("git", "check-ignore", "-q", "local-cluster/cluster.toml")
	check.Dir = ".."
	if err := check.Run(); err != nil {
		t.Errorf("git does not ignore local-cluster/ (scripts/local-cluster.sh's directory): %v", err)
	}
}
