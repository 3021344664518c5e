package cli

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress is a progress bar on stderr, shown only when stderr is a
// terminal: piped or captured output (scripts, tests) gets no escape codes.
// A nil *progress is valid and does nothing.
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress returns a bar counting to max (-1: unknown, a spinner), or nil
// when w is not a terminal.
func newProgress(w io.Writer, max int64, description string) *progress {
	if !isTerminal(w) {
		return nil
	}
	return &progress{bar: progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("rec"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *progress) add(n int) {
	if p != nil {
		_ = p.bar.Add(n)
	}
}

func (p *progress) set(n int64) {
	if p != nil {
		_ = p.bar.Set64(n)
	}
}

// clear wipes the bar off its line, so that a line printed next starts
// clean; the bar draws itself again on its next update.
func (p *progress) clear() {
	if p != nil {
		_ = p.bar.Clear()
	}
}

// finish removes the bar, so that the summary lines that follow start on
// a clean line.
func (p *progress) finish() {
	if p != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
	}
}
