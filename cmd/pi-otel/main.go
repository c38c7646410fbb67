// Command pi-otel makes every run of the Pi coding agent an OpenTelemetry
// trace. See the README for usage.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"

	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/telemetry"
)

func main() {
	// The process-wide settings are made here, once; nothing below main
	// sets one. The exporters read OTEL_* themselves and log what they
	// cannot parse, unprefixed: internal/config has read the same
	// variables and warned, so their logger is off.
	otel.SetLogger(logr.Discard())
	// The SDK reports some errors only through its global handler; each
	// command routes them to its pipeline, which says them once.
	sdkErrors := new(telemetry.ErrorRoute)
	otel.SetErrorHandler(sdkErrors)
	// The stop signals are caught for the whole run: a command that
	// listens (replay, watch, the exit flush) acts on one; run and rpc
	// leave them to Pi, which gets them from launch's forwarding.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)

	env := app.OSEnv()
	env.Signals, env.SDKErrors = app.RelaySignals(sigs), sdkErrors
	os.Exit(app.Main(context.Background(), env))
}
