// Package invtest holds what the tests of the cores' invariant checks
// share. Only tests import it.
package invtest

import (
	"fmt"
	"strings"
	"testing"
)

// MustPanic runs f and fails t unless f panics with a message that
// contains want.
func MustPanic(t testing.TB, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one with %q", want)
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Fatalf("panic %q, want one with %q", msg, want)
		}
	}()
	f()
}
