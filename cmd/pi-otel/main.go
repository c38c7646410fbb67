// Command pi-otel makes every run of the Pi coding agent an OpenTelemetry
// trace. See the README for usage.
package main

import (
	"os"

	"github.com/pi-otel/pi-otel/internal/app"
)

func main() {
	os.Exit(app.Main(app.OSEnv()))
}
