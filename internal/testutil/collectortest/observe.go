package collectortest

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// Eventually polls cond until it returns true or the deadline passes, then fails with msg().
// Pipelines are asynchronous (batching, flush intervals); this waits for data, it does not time it.
func Eventually(t testing.TB, within time.Duration, cond func() bool, msg func() string) {
	t.Helper()
	wait.For(t, within, cond, msg)
}

// Get fetches url and returns the status code and body.
func Get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, buf.Bytes()
}
