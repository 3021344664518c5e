package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// progress is a progress bar on stderr, shown only when stderr is a
// terminal: piped or captured output (scripts, tests) gets no escape codes.
// A nil *progress is valid and does nothing. It is safe for concurrent use
// (produce callbacks run on the client's goroutines).
//
// It draws one line, redrawn in place with a carriage return at most every
// progressThrottle:
//
//	producing  42% |████████▍           | (420/1000, 3512 rec/s)
//	producing ⠹ (420, 3512 rec/s)        (max unknown)
type progress struct {
	w           io.Writer
	max         int64 // -1: unknown
	description string
	// unit names what is counted in the rate ("rec"); "" shows no rate.
	unit string

	mu    sync.Mutex
	n     int64
	start time.Time
	drawn time.Time
	// width is the length of the line drawn last, to clear it.
	width int
	spin  int
}

// progressThrottle bounds how often the bar is redrawn.
const progressThrottle = 100 * time.Millisecond

// progressBarCells is the width of the bar itself, in characters.
const progressBarCells = 20

// newProgress returns a bar counting records to max (-1: unknown, a
// spinner), or nil when w is not a terminal.
func newProgress(w io.Writer, max int64, description string) *progress {
	return newProgressOf(w, max, description, "rec")
}

// newProgressOf is newProgress counting unit ("" for no rate).
func newProgressOf(w io.Writer, max int64, description, unit string) *progress {
	if !isTerminal(w) {
		return nil
	}
	return &progress{w: w, max: max, description: description, unit: unit, start: time.Now()}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *progress) add(n int) {
	if p != nil {
		p.mu.Lock()
		p.n += int64(n)
		p.maybeDraw()
		p.mu.Unlock()
	}
}

func (p *progress) set(n int64) {
	if p != nil {
		p.mu.Lock()
		p.n = n
		p.maybeDraw()
		p.mu.Unlock()
	}
}

// clear wipes the bar off its line, so that a line printed next starts
// clean; the bar draws itself again on its next update.
func (p *progress) clear() {
	if p != nil {
		p.mu.Lock()
		p.erase()
		p.drawn = time.Time{}
		p.mu.Unlock()
	}
}

// finish removes the bar, so that the summary lines that follow start on
// a clean line.
func (p *progress) finish() { p.clear() }

func (p *progress) erase() {
	if p.width > 0 {
		fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.width)+"\r")
		p.width = 0
	}
}

// maybeDraw redraws the line unless it was drawn less than
// progressThrottle ago and the count has not reached max.
func (p *progress) maybeDraw() {
	now := time.Now()
	if now.Sub(p.drawn) < progressThrottle && p.n != p.max {
		return
	}
	p.drawn = now
	var b strings.Builder
	b.WriteString(p.description)
	if p.max > 0 {
		frac := min(1, float64(p.n)/float64(p.max))
		eighths := int(frac * progressBarCells * 8)
		bar := strings.Repeat("█", eighths/8)
		if r := eighths % 8; r > 0 {
			bar += string([]rune("▏▎▍▌▋▊▉")[r-1])
		}
		bar += strings.Repeat(" ", progressBarCells-len([]rune(bar)))
		fmt.Fprintf(&b, " %3.0f%% |%s| (%d/%d", frac*100, bar, p.n, p.max)
	} else {
		p.spin = (p.spin + 1) % 10
		fmt.Fprintf(&b, " %c (%d", []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")[p.spin], p.n)
	}
	if secs := now.Sub(p.start).Seconds(); p.unit != "" && secs > 0 {
		fmt.Fprintf(&b, ", %.0f %s/s", float64(p.n)/secs, p.unit)
	}
	b.WriteString(")")
	line := b.String()
	width := len([]rune(line))
	pad := ""
	if p.width > width {
		pad = strings.Repeat(" ", p.width-width)
	}
	fmt.Fprint(p.w, "\r"+line+pad)
	p.width = width
}
