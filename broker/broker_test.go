package broker

import (
	"testing"
)

func TestStartAndStop(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	vs, err := adm.ApiVersions(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Err != nil {
			t.Fatal(v.Err)
		}
	}
}
