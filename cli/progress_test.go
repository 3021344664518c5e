package cli

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// TestProgressDraws: the bar draws the fraction, the count and the rate,
// always draws the final count, and clear leaves the line blank.
func TestProgressDraws(t *testing.T) {
	var out bytes.Buffer
	if newProgress(&out, 10, "x") != nil {
		t.Fatal("a bar on a writer that is not a terminal")
	}
	p := &progress{w: &out, max: 1000, description: "producing", unit: "rec"}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				p.add(1)
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(out.String(), "\r")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "producing 100% |"+strings.Repeat("█", progressBarCells)+"| (1000/1000, ") || !strings.Contains(last, " rec/s)") {
		t.Fatalf("last drawn line %q", last)
	}
	p.set(250)
	p.set(250) // throttled or not, the state is right
	p.clear()
	if s := out.String(); !strings.HasSuffix(s, "\r"+strings.Repeat(" ", widthBeforeClear(s))+"\r") {
		t.Fatalf("clear did not blank the line: %q", s[max(0, len(s)-80):])
	}

	var spin bytes.Buffer
	s := &progress{w: &spin, max: -1, description: "producing"}
	s.add(7)
	if got := spin.String(); !strings.HasPrefix(got, "\rproducing ") || !strings.HasSuffix(got, " (7)") {
		t.Fatalf("spinner line %q", got)
	}
	var nilBar *progress
	nilBar.add(1)
	nilBar.set(1)
	nilBar.finish()
}

// widthBeforeClear is the width of the line before the blanking in
// s: the part between the last two carriage returns but one.
func widthBeforeClear(s string) int {
	parts := strings.Split(s, "\r")
	return len([]rune(parts[len(parts)-3]))
}
