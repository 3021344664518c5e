package broker

import (
	"os"
	"testing"
	"time"
)

func TestTmpMem(t *testing.T) {
	if os.Getenv("TMPMEM") == "" {
		t.Skip()
	}
	res := runMemoryLoad(t, "", memoryLoad{connections: 200, requestBytes: 8<<20 - 4096, bombs: os.Getenv("BOMBS") != "", duration: 10 * time.Second})
	t.Logf("peak %.1f MiB %+v", mib(res.peakRSS), res)
}
