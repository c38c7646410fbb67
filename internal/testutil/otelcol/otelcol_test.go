//go:build realstack

package otelcol_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/otelcol"
)

// When the health port picked for a collector is taken since, by another
// process that answers 200 there, the collector exits with "address
// already in use" and is started again on fresh ports: that 200 is not
// taken for its own.
func TestStartFreshTakesNoOtherHealthForItsOwn(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer other.Close()
	builds := 0
	p := otelcol.StartFresh(t, func() otelcol.Options {
		builds++
		ports := jaegertest.Ports(freeport.Addrs(t, 6))
		if builds == 1 {
			ports.Health = other.Listener.Addr().String()
		}
		return jaegertest.Options("jaeger", jaegertest.Binary(t), ports)
	})
	if builds != 2 {
		t.Fatalf("started after %d builds, want 2: the first one's health port answered for another process", builds)
	}
	if p.Opts.Health == other.Listener.Addr().String() {
		t.Fatalf("running on the taken health port %s", p.Opts.Health)
	}
}
