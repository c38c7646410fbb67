package app_test

import (
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/outfile"
)

// replayStdin runs replay of a stdin that never ends, as a quiet pipe.
func replayStdin(ctx context.Context, env app.Env) <-chan int {
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		defer pw.Close()
		env.Args = []string{"replay", "--traces-exporter", "none", "--metrics-exporter", "none", "-"}
		env.Stdin, env.Stdout = pr, &outfile.Buffer{}
		env.Getenv = func(string) string { return "" }
		done <- app.Main(ctx, env)
	}()
	return done
}

// waitExit fails the test if a command does not end after its stop; the
// bound guards against a hang, it measures nothing.
func waitExit(t *testing.T, done <-chan int, stderr *outfile.Buffer) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("still running after the stop:\n%s", stderr.String())
	}
}

// Main's context ends a command as a signal does: replay stops reading
// and says what it traced.
func TestMainContextEndsCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var stderr outfile.Buffer
	done := replayStdin(ctx, app.Env{Stderr: &stderr})
	cancel()
	waitExit(t, done, &stderr)
	if want := "pi-otel: interrupted before - had any records: nothing traced"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// The signals main registers reach a command through Env.Signals, not a
// handler of its own: one relayed SIGTERM stops replay.
func TestRelayedSignalEndsCommand(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	defer close(sigs)
	relay := app.RelaySignals(sigs)
	var stderr outfile.Buffer
	done := replayStdin(t.Context(), app.Env{Stderr: &stderr, Signals: relay})
	// Until replay subscribes a signal is dropped, as main drops one
	// nobody waits for: send until it stops.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			select {
			case sigs <- syscall.SIGTERM:
			default:
			}
		case <-deadline:
			t.Fatalf("replay did not stop at a relayed SIGTERM:\n%s", stderr.String())
		}
	}
}
